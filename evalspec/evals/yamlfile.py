"""Reading the YAML of config files and data-card front matter, with line numbers.

PyYAML is an optional dependency (the ``evals`` extra); it is imported only
when one of these files is read, so ``import evalspec`` stays light.
"""

from __future__ import annotations

from typing import Any

import attrs

from evalspec.errors import EvalspecError
from evalspec.io.safeload import DocumentError, MissingYamlError, compose_yaml, construct_yaml

INSTALL_HINT = "reading YAML needs PyYAML: pip install 'evalspec-contract[evals]'"

__all__ = ["INSTALL_HINT", "MissingYamlError", "YamlMapping", "YamlSyntaxError", "load_mapping"]


class YamlSyntaxError(EvalspecError):
    """The text is not YAML this module accepts; ``line`` is 1-based within the text."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


@attrs.frozen
class YamlMapping:
    """A top-level YAML mapping with the 1-based line of every top-level key."""

    data: dict[str, Any]
    lines: dict[str, int]
    paths: dict[tuple[str, ...], int] = attrs.field(factory=dict)
    """Line of every key at any depth, by its path of keys from the top (an item
    of a list is ``"[i]"``: ``("suppress", "[0]", "reason")``)."""

    def line_of(self, key: str, default: int = 1) -> int:
        return self.lines.get(key, default)

    def line_at(self, *path: str) -> int:
        """The line of the deepest key of ``path`` that is known (1 if none)."""
        for end in range(len(path), 0, -1):
            line = self.paths.get(path[:end])
            if line is not None:
                return line
        return 1


def load_mapping(text: str, *, what: str = "the file") -> YamlMapping:
    """Parse ``text`` as a YAML mapping (empty text is an empty mapping).

    Duplicate keys are an error (PyYAML's last-wins would hide a threshold
    written twice), and so is a top level that is not a mapping.

    :raises MissingYamlError: PyYAML is not installed.
    :raises YamlSyntaxError: the text is not a YAML mapping.
    """
    from evalspec.io.safeload import yaml_module

    yaml = yaml_module()
    try:
        node, loader = compose_yaml(text)
    except DocumentError as exc:
        raise YamlSyntaxError(exc.line, exc.about(what)) from None
    if node is None:
        return YamlMapping({}, {})
    if not isinstance(node, yaml.MappingNode):
        raise YamlSyntaxError(node.start_mark.line + 1, f"{what} must be a mapping of keys")
    _reject_duplicates(yaml, node, what)
    try:
        data = construct_yaml(node, loader)
    except DocumentError as exc:  # e.g. a tag the safe loader refuses
        raise YamlSyntaxError(exc.line, exc.about(what)) from None
    lines = {
        str(key.value): key.start_mark.line + 1
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }
    return YamlMapping({str(k): v for k, v in data.items()}, lines, _key_paths(yaml, node))


def _key_paths(yaml: Any, root: Any) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    stack: list[tuple[tuple[str, ...], Any]] = [((), root)]
    while stack:
        prefix, node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    path = (*prefix, str(key.value))
                    out[path] = key.start_mark.line + 1
                    stack.append((path, value))
        elif isinstance(node, yaml.SequenceNode) and prefix:
            for i, item in enumerate(node.value):  # the items of a list: "[0]", "[1]", ...
                path = (*prefix, f"[{i}]")
                out[path] = item.start_mark.line + 1
                stack.append((path, item))
    return out


def _reject_duplicates(yaml: Any, root: Any, what: str) -> None:
    stack = [root]
    # An aliased node is one object reached by several paths: check it once.
    checked: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in checked:
            continue
        checked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        raise YamlSyntaxError(
                            key.start_mark.line + 1, f"{what} repeats the key {key.value!r}"
                        )
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
