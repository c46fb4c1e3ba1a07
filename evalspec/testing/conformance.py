"""The plugin conformance kit: the properties every post-process rule and metric must hold.

It runs against a :class:`evalspec.Registry`, so a rule or metric added by any
installed plugin is fuzzed exactly like the built-in ones. Three ways in:

* ``pytest --evalspec-conformance`` (the pytest plugin) checks the registry
  of the installed and project plugins at the newest version, pending
  (not yet locked) versions included;
* in a plugin's own test suite, parametrize over :func:`conformance_cases`::

      import pytest
      import evalspec_plugins
      from evalspec import build_registry
      from evalspec.testing.conformance import conformance_cases

      import my_plugin

      REGISTRY = build_registry([*evalspec_plugins.load(), my_plugin], entry_points=False)

      @pytest.mark.parametrize("case", conformance_cases(REGISTRY), ids=lambda c: c.id)
      def test_conformance(case):
          case.run()

* :func:`check_registry` runs every case and raises on the first failure.

The properties (hypothesis, with its shrunk counterexample in the failure):

post-process rules
    ``total``: returns a ``str`` for every ``str``, lone surrogates included;
    ``deterministic``: equal input gives equal output, also in a fresh
    interpreter with another ``PYTHONHASHSEED`` (one ``fresh_interpreter``
    case per registry, for every rule and scorer importable by module and
    qualified name); ``contract``, for a rule that declares one
    (``PostProcessRule(..., contract=..., contract_description=...)``): every
    output satisfies it; ``idempotent``, for a rule that declares
    ``idempotent=True``: applied twice equals applied once. Inputs are drawn
    from the rule's own ``shaped_outputs`` mixed with arbitrary text.
metrics with a scorer
    ``deterministic``; ``range``: a finite ``float`` in [0, 1]; and, for a
    metric that declares ``best_target_wins``, ``best_target_wins``: an
    extra target never lowers the score.

Metrics registered without a scorer have nothing to call and get no case;
sandboxed metrics (``code_exec``) run the prediction as a program, so the kit
never feeds them random text (test them with the sandbox).
hypothesis is imported on first use; install ``evalspec-contract[hypothesis]``.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from evalspec.model import PostProcessRule
from evalspec.registry.build import Registry


class ConformanceFailure(AssertionError):
    """A rule or metric broke one of its properties (the message names the input)."""


@attrs.frozen
class Case:
    """One property of one registry entry; :meth:`run` raises :class:`ConformanceFailure`."""

    kind: str
    name: str
    prop: str
    check: Callable[[], None] = attrs.field(eq=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}:{self.prop}"

    def run(self) -> None:
        self.check()

    def __str__(self) -> str:
        return self.id


def _settings(max_examples: int | None) -> Any:
    from hypothesis import HealthCheck, settings

    kwargs: dict[str, Any] = {
        "deadline": None,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
    }
    if max_examples is not None:
        kwargs["max_examples"] = max_examples
    return settings(settings.default, **kwargs)


def _fuzz(
    name: str, strategy: Any, body: Callable[..., None], max_examples: int | None
) -> Callable[[], None]:
    """A hypothesis test calling ``body`` on drawn values, named for its message."""
    from hypothesis import given

    def check(value: Any) -> None:
        body(value)

    check.__name__ = check.__qualname__ = name
    return _settings(max_examples)(given(value=strategy)(check))  # type: ignore[no-any-return]


def _fail(msg: str) -> None:
    raise ConformanceFailure(msg)


_RAISED = object()


def _outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or a marker of the exception type: raising is the totality case's finding."""
    try:
        return fn(*args)
    except Exception as exc:
        return (_RAISED, type(exc).__name__)


def _raised(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and value[0] is _RAISED


def rule_cases(
    rule: PostProcessRule | str,
    fn: Callable[[str], str] | None = None,
    max_examples: int | None = None,
) -> list[Case]:
    """The property cases of one post-process rule.

    Pass the :class:`~evalspec.PostProcessRule` itself, before or after it is
    registered: its declared ``contract``, ``idempotent`` and
    ``shaped_outputs`` add and shape the cases. ``rule_cases(name, fn)``
    checks a bare function for totality and determinism only.
    """
    from evalspec.testing.strategies import model_outputs

    if not isinstance(rule, PostProcessRule):
        if fn is None:
            msg = "rule_cases(name, fn) needs the rule's function"
            raise TypeError(msg)
        rule = PostProcessRule(rule, fn)
    elif fn is not None:
        msg = "rule_cases(rule) takes the function from the rule; do not pass fn"
        raise TypeError(msg)
    name, fn = rule.name, rule.function
    texts = model_outputs(rule)

    def total(text: str) -> None:
        try:
            out = fn(text)
        except Exception as exc:
            _fail(f"{name} raised {type(exc).__name__}: {exc} on {text!r}")
        else:
            if not isinstance(out, str):
                _fail(f"{name} returned {type(out).__name__}, not str, on {text!r}")

    def deterministic(text: str) -> None:
        first, again = _outcome(fn, text), _outcome(fn, "".join(list(text)))
        if first != again:
            _fail(f"{name} is not deterministic on {text!r}: {first!r} then {again!r}")

    cases = [
        Case("post_process", name, "total", _fuzz(f"{name}_is_total", texts, total, max_examples)),
        Case(
            "post_process",
            name,
            "deterministic",
            _fuzz(f"{name}_is_deterministic", texts, deterministic, max_examples),
        ),
    ]
    if rule.contract is not None:
        what, holds = rule.contract_description or "its declared contract", rule.contract

        def contract(text: str) -> None:
            out = _outcome(fn, text)
            if not _raised(out) and not holds(out):
                _fail(f"{name} must give {what}; gave {out!r} on {text!r}")

        cases.append(
            Case(
                "post_process",
                name,
                "contract",
                _fuzz(f"{name}_meets_its_contract", texts, contract, max_examples),
            )
        )
    if rule.idempotent:

        def idempotent(text: str) -> None:
            once = _outcome(fn, text)
            if _raised(once):
                return
            twice = _outcome(fn, once)
            if twice != once:
                _fail(f"{name} is not idempotent on {text!r}: {once!r} then {twice!r}")

        cases.append(
            Case(
                "post_process",
                name,
                "idempotent",
                _fuzz(f"{name}_is_idempotent", texts, idempotent, max_examples),
            )
        )
    return cases


def metric_cases(
    name: str,
    scorer: Callable[[str, Sequence[str]], float],
    max_examples: int | None = None,
    *,
    best_target_wins: bool = False,
    registry: Registry | None = None,
) -> list[Case]:
    """The property cases of one metric scorer, before it is registered.

    ``best_target_wins`` adds the case that an extra target never lowers the score.
    Predictions are arbitrary text mixed with the shaped outputs of the rules
    of ``registry`` (none when it is not given).
    """
    from hypothesis import strategies as st

    from evalspec.testing.strategies import any_text, json_text, model_outputs

    outputs = any_text(max_size=60) if registry is None else model_outputs(None, registry)
    pairs = st.tuples(outputs, st.lists(json_text(), min_size=1, max_size=3))

    def in_range(pair: tuple[str, list[str]]) -> None:
        prediction, targets = pair
        score = _outcome(scorer, prediction, targets)
        if _raised(score):
            _fail(
                f"metric {name} raised {score[1]} for prediction {prediction!r}, "
                f"targets {targets!r}"
            )
        if not isinstance(score, float) or not math.isfinite(score) or not 0.0 <= score <= 1.0:
            _fail(
                f"metric {name} must score a finite float in [0, 1]; gave {score!r} "
                f"for prediction {prediction!r}, targets {targets!r}"
            )

    def deterministic(pair: tuple[str, list[str]]) -> None:
        prediction, targets = pair
        first = _outcome(scorer, prediction, targets)
        again = _outcome(scorer, "".join(list(prediction)), list(targets))
        if first != again:
            _fail(
                f"metric {name} is not deterministic for prediction {prediction!r}, "
                f"targets {targets!r}: {first!r} then {again!r}"
            )

    cases = [
        Case(
            "metric", name, "range", _fuzz(f"{name}_scores_in_range", pairs, in_range, max_examples)
        ),
        Case(
            "metric",
            name,
            "deterministic",
            _fuzz(f"{name}_is_deterministic", pairs, deterministic, max_examples),
        ),
    ]
    if best_target_wins:
        triples = st.tuples(pairs, json_text())

        def monotone(value: tuple[tuple[str, list[str]], str]) -> None:
            (prediction, targets), extra = value
            before = _outcome(scorer, prediction, targets)
            after = _outcome(scorer, prediction, [*targets, extra])
            if not _raised(before) and not _raised(after) and after < before:
                _fail(
                    f"metric {name} declares best_target_wins, but adding target {extra!r} "
                    f"lowered {before!r} to {after!r} for prediction {prediction!r}, "
                    f"targets {targets!r}"
                )

        cases.append(
            Case(
                "metric",
                name,
                "best_target_wins",
                _fuzz(f"{name}_best_target_wins", triples, monotone, max_examples),
            )
        )
    return cases


# -- determinism across interpreters ------------------------------------------------------

_CHILD = (
    "import json, sys\n"
    "from evalspec.testing.conformance import _call_all\n"
    "json.dump(_call_all(json.load(sys.stdin)), sys.stdout)\n"
)


def _importable(fn: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` when a fresh interpreter can find ``fn`` by name."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return (module, qualname) if obj is fn else None


def corpus(size: int = 64, seed: int = 20240229) -> list[str]:
    """Fixed tricky strings plus seeded random ones (lone surrogates included)."""
    fixed = [
        "",
        " ",
        "\n",
        "A",
        "Answer: C",
        "```python\nprint(1)\n```",
        "```\r\nx\r\n```",
        "first\n\nsecond",
        "\u2028x\u2029y",
        "ß İ ǅ",
        "\ud800",
        "x\udfffy",
        " \t padded \u3000",
        "zyxwvutsrqponmlkjihgfedcba",
    ]
    rng = random.Random(seed)
    alphabet = [*"ABCDEabcde xyz:.\n\r\t`", "\u0130", "\u00df", "\ud800", "\u3000", "\u2028"]
    for _ in range(size):
        fixed.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))))
    return fixed


def _hash_seed() -> str:
    current = os.environ.get("PYTHONHASHSEED", "")
    return "1" if current != "1" else "2"


def fresh_interpreter_check(registry: Registry) -> Callable[[], None]:
    """A check that importable rules and scorers agree in a fresh interpreter.

    The child runs with another ``PYTHONHASHSEED``, so output that depends on
    ``set`` or ``dict`` order of strings (hash randomization) is caught.
    """

    def check() -> None:
        calls: list[tuple[str, str, list[Any]]] = []
        labels: list[str] = []
        texts = corpus()
        for name in sorted(registry.post_processors):
            fn = registry.post_processors[name].function
            where = _importable(fn)
            if where is not None:
                for text in texts:
                    calls.append((*where, [text]))
                    labels.append(f"post_process {name} on {text!r}")
        for name in sorted(registry.metrics):
            scorer = registry.metrics[name].scorer
            if registry.metrics[name].sandboxed:
                continue  # runs the prediction as a program; see conformance_cases
            where = _importable(scorer) if scorer is not None else None
            if where is not None:
                for text in texts[:16]:
                    calls.append((*where, [text, [texts[-1], text[:3]]]))
                    labels.append(f"metric {name} on {text!r}")
        if not calls:
            return
        here = json.loads(json.dumps(_call_all(calls)))
        env = {**os.environ, "PYTHONHASHSEED": _hash_seed()}
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(calls),
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode != 0:
            _fail(f"the fresh interpreter failed: {proc.stderr.strip()[-2000:]}")
        there = json.loads(proc.stdout)
        for label, a, b in zip(labels, here, there, strict=True):
            if a != b:
                _fail(
                    f"{label} differs in a fresh interpreter with PYTHONHASHSEED="
                    f"{env['PYTHONHASHSEED']}: {a[1]!r} here, {b[1]!r} there"
                )

    return check


def _call_all(calls: list[tuple[str, str, list[Any]]]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for module, qualname, args in calls:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        try:
            out.append(["ok", obj(*args)])
        except Exception as exc:
            out.append(["raised", type(exc).__name__])
    return out


# -- entry points -------------------------------------------------------------------------


def installed_registry(spec_version: int | None = None) -> Registry:
    """What the kit checks by default: every installed and project plugin's entries.

    Without ``spec_version`` this is the newest version in the table, pending
    ones included (a plugin is checked before its migration is locked); with
    one, the project's registry at that version (it must be in force).
    """
    from evalspec.registry.build import default_registry, project_registry

    if spec_version is not None:
        return default_registry(spec_version)
    return project_registry(pending=True)


def conformance_cases(
    registry: Registry | None = None, *, max_examples: int | None = None
) -> list[Case]:
    """Every property case for every rule and scored metric in ``registry``.

    :param registry: default: :func:`installed_registry`, every entry of the
        installed and project plugins, pending versions included.
    :param max_examples: examples per property (default: the active
        hypothesis profile's).
    """
    if registry is None:
        registry = installed_registry()
    cases: list[Case] = []
    for name in sorted(registry.post_processors):
        cases.extend(rule_cases(registry.post_processors[name], max_examples=max_examples))
    for name in sorted(registry.metrics):
        metric = registry.metrics[name]
        # A sandboxed scorer runs the prediction as a program: it needs the
        # sandbox and the user's opt-in, so random text is never fed to it here.
        if metric.scorer is not None and not metric.sandboxed:
            cases.extend(
                metric_cases(
                    name,
                    metric.scorer,  # type: ignore[arg-type]
                    max_examples,
                    best_target_wins=metric.best_target_wins,
                    registry=registry,
                )
            )
    cases.append(
        Case(
            "registry",
            f"v{registry.version}",
            "fresh_interpreter",
            fresh_interpreter_check(registry),
        )
    )
    return cases


def check_registry(registry: Registry | None = None, *, max_examples: int | None = None) -> None:
    """Run every case; raise :class:`ConformanceFailure` (or hypothesis's error) on the first."""
    for case in conformance_cases(registry, max_examples=max_examples):
        case.run()


__all__ = [
    "Case",
    "ConformanceFailure",
    "check_registry",
    "conformance_cases",
    "corpus",
    "fresh_interpreter_check",
    "installed_registry",
    "metric_cases",
    "rule_cases",
]
