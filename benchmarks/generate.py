"""Deterministic generator of benchmark task files (a realistic valid/invalid mix).

``python benchmarks/generate.py N OUT`` writes N task lines (~0.9 KB each) to
OUT. The same N and seed always give the same bytes. About 2% of the lines
are invalid, spread over many kinds of failure (every parse hazard, every
field rule, duplicate task ids), so a benchmark measures the precise path's
share as well as the common valid line.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_WORD_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when "
    "model answer question number value result table river city energy system people "
    "language history market water light problem student teacher data paper report "
    "because between through during without against among however therefore"
)
WORDS = tuple(_WORD_TEXT.split(" "))

_CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "arithmetic": (("exact_match", "accuracy"), ("none", "strip_whitespace", "extract_first_line")),
    "mcq": (("exact_match",), ("extract_letter", "strip_whitespace", "none")),
    "code_exec": (("code_exec",), ("extract_code_block", "none")),
    "classification": (
        ("exact_match", "accuracy", "f1"),
        ("none", "strip_whitespace", "lower", "extract_first_line"),
    ),
    "summary": (("rouge_l", "bleu_4", "f1"), ("none", "strip_whitespace", "extract_first_line")),
}


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _sentences(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        s = _text(rng, rng.randint(6, 16)).capitalize() + "."
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


def valid_task(rng: random.Random, index: int) -> dict[str, Any]:
    """One valid task of a random category, ~0.9 KB as JSON."""
    category = rng.choice(list(_CATEGORIES))
    metrics, rules = _CATEGORIES[category]
    examples: list[dict[str, str]] = []
    if category == "arithmetic":
        a, b = rng.randint(1, 999), rng.randint(1, 999)
        context = _sentences(rng, rng.randint(450, 650))
        prompt = f"{context}\nQuestion: {a} + {b}\nAnswer:"
        targets = [str(a + b)]
        for _ in range(rng.randint(0, 3)):
            x, y = rng.randint(1, 99), rng.randint(1, 99)
            examples.append({"prompt": f"Question: {x} + {y}\nAnswer:", "completion": str(x + y)})
    elif category == "mcq":
        stem = _sentences(rng, rng.randint(350, 550))
        options = "\n".join(f"{c}. {_text(rng, rng.randint(2, 6))}" for c in "ABCD")
        prompt = f"{stem}\n{options}\nAnswer with the letter only."
        targets = [rng.choice("ABCD")]
    elif category == "code_exec":
        prompt = (
            f"Write a Python function solve(xs) that {_text(rng, 12)}. "
            f"{_sentences(rng, rng.randint(350, 550))}"
        )
        targets = [f"assert solve([{rng.randint(0, 9)}]) == {rng.randint(0, 9)}"]
    elif category == "classification":
        prompt = f"Classify the sentiment of the text. {_sentences(rng, rng.randint(400, 600))}"
        targets = [rng.choice(("positive", "negative", "neutral"))]
        if rng.random() < 0.5:
            examples.append({"prompt": _text(rng, 8) + ".", "completion": "positive"})
    else:
        paragraphs = [_sentences(rng, rng.randint(150, 250)) for _ in range(rng.randint(2, 3))]
        prompt = "\n\n".join(paragraphs) + "\n\nSummary:"
        targets = [_sentences(rng, rng.randint(60, 120))]
    task: dict[str, Any] = {
        "task_id": f"{category}-{index:08d}",
        "category": category,
        "prompt": prompt,
        "targets": targets,
        "metric_name": rng.choice(metrics),
        "post_process": rng.choice(rules),
    }
    if examples:
        task["few_shot_examples"] = examples
    task["metadata"] = {
        "source": rng.choice(("synthetic", "logged", "curated")),
        "difficulty": rng.choice(("easy", "medium", "hard")),
        "seed": rng.randint(0, 2**31),
        "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 3))],
    }
    if rng.random() < 0.2:
        task["metadata"]["weight"] = round(rng.random(), 3)
    if rng.random() < 0.05:
        task["metadata"]["annotator"] = {"id": rng.randint(0, 99), "note": _text(rng, 4)}
    return task


def _dump(obj: Any, rng: random.Random) -> bytes:
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8")


# Each breaker turns a valid task into one invalid line of one kind.
def _breakers() -> list[Callable[[dict[str, Any], random.Random], bytes]]:
    def with_(key: str, value: Any) -> Callable[[dict[str, Any], random.Random], bytes]:
        def f(t: dict[str, Any], rng: random.Random) -> bytes:
            t = dict(t)
            t[key] = value
            return _dump(t, rng)

        return f

    def drop(key: str) -> Callable[[dict[str, Any], random.Random], bytes]:
        def f(t: dict[str, Any], rng: random.Random) -> bytes:
            t = dict(t)
            t.pop(key, None)
            return _dump(t, rng)

        return f

    def raw(fn: Callable[[bytes], bytes]) -> Callable[[dict[str, Any], random.Random], bytes]:
        return lambda t, rng: fn(_dump(t, rng))

    return [
        raw(lambda b: b[:-7]),  # truncated: invalid_json
        raw(lambda b: b[:-1] + b', "task_id": "x"}'),  # duplicate_key at the top
        raw(lambda b: b.replace(b'"metadata": {', b'"metadata": {"source": 1, ', 1)),  # nested dup
        raw(lambda b: b[:-1] + b', "seed": NaN}'),  # NaN
        raw(lambda b: b.replace(b'"metadata": {', b'"metadata": {"big": 1e400, ', 1)),
        raw(lambda b: b.replace(b'"metadata": {', b'"metadata": {"n": 1' + b"0" * 30 + b", ", 1)),
        raw(lambda b: b.replace(b'"prompt": "', b'"prompt": "\\ud800', 1)),  # lone surrogate
        raw(lambda b: b.replace(b'"prompt": "', b'"prompt": "\xff', 1)),  # invalid UTF-8
        lambda t, rng: b"[" + _dump(t, rng) + b"]",  # not_object
        drop("targets"),
        with_("difficulty", "easy"),
        with_("targets", "41"),
        with_("post_process", ["strip_whitespace", "lower"]),
        with_("task_id", "has space"),
        with_("category", "trivia"),
        with_("prompt", "   "),
        lambda t, rng: with_("prompt", t["prompt"] + " ")(t, rng),
        with_("targets", []),
        with_("metric_name", "bleu"),
        with_("few_shot_examples", [{"prompt": "Q", "completion": "A"}] * 9),
        with_("few_shot_examples", [{"prompt": "Q"}]),
        with_("post_process", "strip_whitespace+lower"),
        with_("metric_name", "code_exec"),  # illegal_metric for most categories
        with_("post_process", "extract_letter"),  # illegal for most categories
        lambda t, rng: with_("prompt", "Q: 1+1\nA: 2\n\nQ: 2+2\nA:")(
            t, rng
        ),  # prompt_embedded_few_shot
    ]


def generate(n: int, seed: int = 0, invalid_rate: float = 0.02) -> Iterator[bytes]:
    """N task lines (without newline); ~``invalid_rate`` of them invalid, some ids repeated."""
    rng = random.Random(seed)
    breakers = _breakers()
    for i in range(n):
        task = valid_task(rng, i)
        r = rng.random()
        if r < invalid_rate * 0.1 and i > 0:
            # a duplicate task id: reuse an earlier index (possibly far back, across chunks)
            task["task_id"] = f"{task['category']}-{rng.randrange(i):08d}"
            yield _dump(task, rng)
        elif r < invalid_rate:
            yield rng.choice(breakers)(task, rng)
        else:
            yield _dump(task, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", type=int, help="number of task lines (1k to 1M)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with args.out.open("wb") as f:
        for line in generate(args.n, args.seed):
            f.write(line + b"\n")


if __name__ == "__main__":
    main()
