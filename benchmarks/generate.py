"""Deterministic generator of benchmark task files (a realistic valid/invalid mix).

``python benchmarks/generate.py N OUT [--mix other]`` writes N task lines
(~0.9 KB each) to OUT. ``--mix other`` is a second, different realistic mix
(chat-shaped and multilingual prompts, full-width cues, up to 8 few-shot
examples, nested metadata with URLs and unicode keys, compact and spaced
lines). The same N and seed always give the same bytes. About 2% of the lines
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


# -- a second, different mix -------------------------------------------------------------

_ZH = "模型在阅读理解任务中需要根据上下文回答问题并给出简短的答案这个城市的河流历史很长"
_JA = "これは評価用の文章ですモデルは質問に答えなければなりません東京の天気は晴れ"
_RU = "модель должна ответить на вопрос по тексту история города реки и рынка"
_EMOJI = "🙂🚀📈🌍✨"


def _multilingual(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        kind = rng.random()
        if kind < 0.3:
            start = rng.randrange(len(_ZH) - 12)
            piece = _ZH[start : start + rng.randint(6, 12)] + "。"
        elif kind < 0.45:
            start = rng.randrange(len(_JA) - 10)
            piece = _JA[start : start + rng.randint(5, 10)] + "。"
        elif kind < 0.6:
            piece = " ".join(rng.choice(_RU.split()) for _ in range(rng.randint(3, 8))) + "."
        else:
            piece = _text(rng, rng.randint(4, 12)).capitalize() + rng.choice(".!?;") + " "
        if rng.random() < 0.03:
            piece += rng.choice(_EMOJI)
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _chat(rng: random.Random, question: str, cue: str) -> str:
    system = rng.choice(
        (
            "You are a careful assistant. Answer briefly.",
            "你是一个认真的助手\uff0c请简短回答。",
            "Answer with the final value only; no explanation.",
        )
    )
    return f"System: {system}\nUser: {question}\n{cue}"


def other_task(rng: random.Random, index: int) -> dict[str, Any]:
    """One valid task of the second mix: chat-shaped and multilingual prompts, long
    few-shot lists, full-width cues, nested metadata with URLs and unicode keys."""
    category = rng.choice(list(_CATEGORIES))
    metrics, rules = _CATEGORIES[category]
    examples: list[dict[str, str]] = []
    if category == "arithmetic":
        a, b = rng.randint(1, 10**6), rng.randint(1, 10**6)
        cue = rng.choice(("Assistant:", "答案\uff1a", "A:"))
        prompt = _chat(rng, f"{_multilingual(rng, rng.randint(80, 300))} {a} * {b} = ?", cue)
        targets = [str(a * b)]
        for _ in range(rng.randint(0, 8)):
            x, y = rng.randint(1, 999), rng.randint(1, 999)
            examples.append({"prompt": f"计算 {x} * {y}", "completion": str(x * y)})
    elif category == "mcq":
        stem = _multilingual(rng, rng.randint(200, 700))
        options = " ".join(f"({c}) {_multilingual(rng, rng.randint(5, 30))}" for c in "ABCDE")
        prompt = f"{stem}\n{options}\n请只回答选项字母"
        targets = [rng.choice("ABCDE")]
        for _ in range(rng.randint(0, 4)):
            examples.append(
                {"prompt": f"{_text(rng, 6)}? (A) yes (B) no", "completion": rng.choice("AB")}
            )
    elif category == "code_exec":
        body = "\n".join(
            f"    {rng.choice(('x', 'acc', 'n'))} = {rng.randint(0, 9)}  # {_text(rng, 3)}"
            for _ in range(rng.randint(2, 8))
        )
        prompt = f"```python\ndef solve(xs):\n{body}\n```\nComplete solve: {_text(rng, 10)}"
        targets = [
            "\n".join(f"assert solve({[rng.randint(0, 9)]}) == {rng.randint(0, 9)}" for _ in "ab")
        ]
    elif category == "classification":
        prompt = f"{_multilingual(rng, rng.randint(100, 1200))}\nLabel (positive/negative)"
        targets = [rng.choice(("positive", "negative", "中性"))]
        for _ in range(rng.randint(0, 6)):
            examples.append(
                {
                    "prompt": _multilingual(rng, 40),
                    "completion": rng.choice(("positive", "negative")),
                }
            )
    else:
        prompt = "\n\n".join(_multilingual(rng, rng.randint(100, 400)) for _ in range(3))
        prompt += rng.choice(("\n\nTL;DR", "\n\n摘要\uff1a", "\n\nSummarise in one sentence."))
        targets = [
            _multilingual(rng, rng.randint(30, 90)).strip() for _ in range(rng.randint(1, 3))
        ]
    task: dict[str, Any] = {
        "task_id": f"{rng.choice(('zh', 'en', 'ja'))}/{category}/{index:07d}",
        "category": category,
        "prompt": prompt.strip(),
        "targets": targets,
        "metric_name": rng.choice(metrics),
        "post_process": rng.choice(rules),
    }
    if examples:
        task["few_shot_examples"] = examples
    if rng.random() < 0.85:
        task["metadata"] = {
            "source": {
                "url": f"https://example.org/{rng.choice(WORDS)}/{rng.randint(1, 10**6)}?q=a:b",
                "license": rng.choice(("CC-BY-4.0", "MIT", None)),
            },
            "语言": rng.choice(("中文", "English", "日本語")),
            "difficulty": rng.random(),
            "verified": rng.random() < 0.5,
            "annotators": [
                {"id": rng.randint(0, 999), "agree": rng.random() < 0.8}
                for _ in range(rng.randint(0, 3))
            ],
            "counts": [rng.randint(-(2**40), 2**40) for _ in range(rng.randint(0, 4))],
        }
    keys = list(task)
    rng.shuffle(keys)  # writers order keys differently
    return {k: task[k] for k in keys}


def _dump_other(obj: Any, rng: random.Random) -> bytes:
    compact = rng.random() < 0.5  # orjson-style compact lines and json.dumps-style spaced ones
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(obj, ensure_ascii=rng.random() < 0.3, separators=separators)
    return text.encode("utf-8")


def generate_other(n: int, seed: int = 0, invalid_rate: float = 0.02) -> Iterator[bytes]:
    """N lines of the second mix; ~``invalid_rate`` of them broken as :func:`generate`
    breaks its lines."""
    rng = random.Random(seed + 1_000_003)
    breakers = _breakers()
    for i in range(n):
        task = other_task(rng, i)
        r = rng.random()
        if r < invalid_rate * 0.1 and i > 0:
            task["task_id"] = task["task_id"].rsplit("/", 1)[0] + f"/{rng.randrange(i):07d}"
            yield _dump_other(task, rng)
        elif r < invalid_rate:
            task.setdefault("metadata", {})
            yield rng.choice(breakers)(task, rng)
        else:
            yield _dump_other(task, rng)


MIXES: dict[str, Callable[[int], Iterator[bytes]]] = {
    "default": generate,
    "other": generate_other,
}
"""Generators by name: ``default`` (the mix the targets were first set on) and
``other`` (a different realistic mix, to check the figures hold on it too)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", type=int, help="number of task lines (1k to 1M)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mix", choices=sorted(MIXES), default="default")
    args = parser.parse_args()
    make = generate if args.mix == "default" else generate_other
    with args.out.open("wb") as f:
        for line in make(args.n, args.seed):
            f.write(line + b"\n")


if __name__ == "__main__":
    main()
