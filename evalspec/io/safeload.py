"""Bounded reading of the YAML and JSON documents evalspec reads from a repository.

Cards, ``labels.yaml``, ``gates.yaml``, manifests, score reports and lock
files arrive in pull requests, so each is read as a stranger's input: the
file is read up to a byte limit (a 200 GB file or ``/dev/zero`` is refused
after the limit, not read to the end), YAML aliases are counted and a
recursive alias is refused while the document is composed (a 20-byte
``x: &r [*r]`` or a "billion laughs" can neither hang nor blow up a walker),
and nesting deeper than :data:`MAX_DEPTH` is refused in both formats, so no
``RecursionError`` can reach any code that walks the value.

Every refusal is a :class:`DocumentError` with a one-line message and, when
known, the 1-based line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from evalspec.errors import EvalspecError, MissingDependencyError

MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences (YAML) or objects and arrays (JSON)."""
MAX_ALIASES = 1000
"""Most alias uses (``*name``) in one YAML document."""
MAX_NODES = 100_000
"""Most nodes in one YAML document after every alias is expanded."""
MAX_YAML_BYTES = 1 << 20
"""Largest YAML document (1 MiB): config files and card front matter are small."""
MAX_JSON_BYTES = 256 << 20
"""Largest JSON document (256 MiB): score reports of large datasets are big."""
MAX_TEXT_BYTES = 16 << 20
"""Largest data card or CODEOWNERS file (16 MiB); its YAML front matter has the YAML limit."""


class DocumentError(EvalspecError):
    """A document breaks a limit or is not valid; ``line`` is 1-based (1 when unknown)."""

    def __init__(self, message: str, line: int = 1) -> None:
        self.line = line
        self.message = message
        super().__init__(message if line <= 1 else f"line {line}: {message}")

    def about(self, what: str) -> str:
        """The message as a sentence about ``what`` (a file name or a description)."""
        if self.message.startswith("not valid"):
            return f"{what} is {self.message}"
        return f"{what}: {self.message}"


class MissingYamlError(MissingDependencyError):
    """PyYAML is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "reading YAML",
            "pyyaml",
            "evals",
            message="reading YAML needs PyYAML: pip install 'evalspec-contract[evals]'",
        )


def read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The file's bytes; :class:`DocumentError` when it holds more than ``max_bytes``.

    Reads at most one byte past the limit, so a device or an endless file
    ends the read at once. :raises OSError: the file cannot be opened or read.
    """
    with open(path, "rb") as f:
        return _read_within(f, path, max_bytes)


def _read_within(f: BinaryIO, path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """All of the open file ``f`` (named ``path``), reading at most one byte past the limit."""
    data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DocumentError(f"{path} is larger than the {_mib(max_bytes)} limit")
    return data


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


# --------------------------------------------------------------------- JSON


def json_depth_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """A message when ``value`` nests deeper than ``max_depth`` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return f"nesting is deeper than {max_depth} levels"
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return None


def loads_json(text: str | bytes, *, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth``.

    ``kwargs`` go to :func:`json.loads`. :raises DocumentError: not JSON or too deep.
    """
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise DocumentError(f"nesting is deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"not valid JSON: {exc.msg}", exc.lineno) from None
    except (ValueError, UnicodeDecodeError) as exc:  # e.g. an int over the digit limit
        raise DocumentError(f"not valid JSON: {exc}") from None
    problem = json_depth_problem(value, max_depth)
    if problem is not None:
        raise DocumentError(problem)
    return value


# --------------------------------------------------------------------- YAML


def yaml_module() -> Any:
    """PyYAML, or :class:`MissingYamlError`."""
    try:
        import yaml
    except ImportError:
        raise MissingYamlError from None
    return yaml


_LOADERS: dict[str, Any] = {}


def bounded_loader(libyaml: bool = True) -> Any:
    """A PyYAML safe loader class enforcing the limits while it composes.

    libyaml's parser (``CParser``) makes the events when PyYAML was built
    with it (and ``libyaml``); composing is always PyYAML's Python composer,
    extended here, so the limits hold with either parser.
    """
    key = "c" if libyaml else "py"
    if key in _LOADERS:
        return _LOADERS[key]
    yaml = yaml_module()
    from yaml.events import AliasEvent, CollectionStartEvent

    # Typed as Any: PyYAML's mixin classes are assembled at run time.
    composer: Any = yaml.composer.Composer
    safe_constructor: Any = yaml.constructor.SafeConstructor
    resolver: Any = yaml.resolver.Resolver
    python_loader: Any = yaml.SafeLoader

    class BoundedComposer(composer):  # type: ignore[misc]
        def _bounded_init(self) -> None:
            self.anchors: dict[str, Any] = {}
            self._depth = 0
            self._aliases = 0
            self._nodes = 0
            self._open: set[str] = set()
            self._sizes: dict[str, int] = {}

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            mark = event.start_mark
            anchor: str | None = event.anchor
            if isinstance(event, AliasEvent):
                if anchor in self._open:
                    raise DocumentError(
                        f"the alias *{anchor} refers to its own node (a recursive alias)",
                        mark.line + 1,
                    )
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    raise DocumentError(f"more than {MAX_ALIASES} aliases", mark.line + 1)
                # An alias stands for its whole node: count it expanded.
                self._count(self._sizes.get(anchor or "", 1), mark)
                return super().compose_node(parent, index)
            self._count(1, mark)
            collection = isinstance(event, CollectionStartEvent)
            if collection:
                self._depth += 1
                if self._depth > MAX_DEPTH:
                    raise DocumentError(f"nesting is deeper than {MAX_DEPTH} levels", mark.line + 1)
                if anchor is not None:
                    self._open.add(anchor)
            before = self._nodes
            try:
                node = super().compose_node(parent, index)
            finally:
                if collection:
                    self._depth -= 1
                    if anchor is not None:
                        self._open.discard(anchor)
            if anchor is not None:
                self._sizes[anchor] = self._nodes - before + 1
            return node

        def _count(self, n: int, mark: Any) -> None:
            self._nodes += n
            if self._nodes > MAX_NODES:
                raise DocumentError(
                    f"more than {MAX_NODES} nodes once aliases are expanded", mark.line + 1
                )

    parser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None) if libyaml else None
    if parser is not None:

        class CBoundedLoader(BoundedComposer, parser, safe_constructor, resolver):  # type: ignore[misc]
            def __init__(self, stream: Any) -> None:
                parser.__init__(self, stream)
                safe_constructor.__init__(self)
                resolver.__init__(self)
                self._bounded_init()

        loader: Any = CBoundedLoader
    else:

        class BoundedLoader(BoundedComposer, python_loader):  # type: ignore[misc]
            def __init__(self, stream: Any) -> None:
                python_loader.__init__(self, stream)
                self._bounded_init()

        loader = BoundedLoader
    _LOADERS[key] = loader
    return loader


def compose_yaml(text: str, *, libyaml: bool = True) -> tuple[Any, Any]:
    """``(node, loader)`` of the single YAML document in ``text`` (node None if empty).

    :raises DocumentError: a limit is broken or the text is not YAML.
    """
    yaml = yaml_module()
    if len(text) > MAX_YAML_BYTES:
        raise DocumentError(f"the document is larger than the {_mib(MAX_YAML_BYTES)} limit")
    loader = bounded_loader(libyaml)(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        if "nesting depth" in str(exc.problem):  # libyaml's own, higher, depth limit
            raise DocumentError(f"nesting is deeper than {MAX_DEPTH} levels", line) from None
        raise DocumentError(f"not valid YAML: {exc.problem}", line) from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"not valid YAML: {exc}") from None
    except RecursionError:  # belt and braces: MAX_DEPTH stops long before
        raise DocumentError(f"nesting is deeper than {MAX_DEPTH} levels") from None
    return node, loader


def construct_yaml(node: Any, loader: Any) -> Any:
    """The Python value of a node from :func:`compose_yaml`."""
    yaml = yaml_module()
    try:
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DocumentError(
            f"not valid YAML: {exc.problem}", mark.line + 1 if mark is not None else 1
        ) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        # ValueError: an integer over the digit limit, a bad timestamp ...
        raise DocumentError(f"not valid YAML: {exc}") from None
    except RecursionError:
        raise DocumentError(f"nesting is deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()


def loads_yaml(text: str, *, libyaml: bool = True) -> Any:
    """The value of the single YAML document in ``text`` (None when empty), within the limits."""
    node, loader = compose_yaml(text, libyaml=libyaml)
    if node is None:
        return None
    return construct_yaml(node, loader)


def read_text_inside(
    path: str | os.PathLike[str], root: str | os.PathLike[str], max_bytes: int = MAX_YAML_BYTES
) -> str:
    """A UTF-8 text file of a pull request read within ``max_bytes``, opened once
    through :func:`evalspec.io.repository.open_for_reading`: a config or card spelled
    inside ``root`` that a symlink sends out of it is refused before a byte is read
    (its values would be printed back in the problems).

    :raises OutsideRootError: it leads outside ``root``, or is no regular file.
    :raises DocumentError: too large. :raises OSError: unreadable.
    :raises UnicodeDecodeError: not UTF-8.
    """
    from evalspec.io.repository import open_for_reading

    with open_for_reading(path, root) as f:
        return _read_within(f, path, max_bytes).decode("utf-8")


def read_in_repository(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a file that may arrive in a pull request (a gates config, a labels
    file, a card, a committed report, a dataset's working copy), within ``max_bytes``,
    opened once through :func:`evalspec.io.repository.open_inside` with the repository
    the path is spelled in (that of its directory) as the root: a symlink that sends
    it out of that repository is refused before a byte is read, whatever the working
    directory, since what is read is printed back in problems and reports.

    :raises OutsideRootError: it leads outside its repository, or is no regular file.
    :raises DocumentError: too large. :raises OSError: unreadable.
    """
    from evalspec.io.repository import open_inside, repository_of

    root = repository_of(os.path.dirname(os.path.abspath(path)))
    with open_inside(path, root) as f:
        return _read_within(f, path, max_bytes)


def read_text_bounded(path: str | os.PathLike[str], max_bytes: int = MAX_YAML_BYTES) -> str:
    """A UTF-8 text file read within ``max_bytes``.

    :raises DocumentError: too large. :raises OSError: unreadable.
    :raises UnicodeDecodeError: not UTF-8.
    """
    return read_bounded(Path(path), max_bytes).decode("utf-8")
