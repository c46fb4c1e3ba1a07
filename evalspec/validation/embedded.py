"""Detecting a few-shot block that an author wrote into a prompt.

Few-shot rendering is the runner's job (:func:`evalspec.render`), so a prompt
must not already contain one. The rule, exactly:

(a) **Own examples.** The prompt contains one of the task's own
    ``few_shot_examples`` as the runner would render it
    (``prompt + " " + completion``), compared after collapsing every run of
    whitespace to one space, so a copy with different line breaks is caught.
    Examples whose rendering is whitespace only are ignored.

(b) **Answered cue.** The prompt ends with a *cue*: its last
    whitespace-separated token ends in a colon (``:``, or U+FF1A, the full-width colon) and has some
    other character before it, e.g. ``Answer:`` or ``A:``. The prompt is split
    into blocks at blank lines (a line that is empty or whitespace only). If
    any block *before* the last one contains that same cue, at the start of a
    line or after whitespace, followed by an answer (non-whitespace text
    after the cue, on the same line or the next lines of the block), the
    prompt holds a few-shot block. ``Question: 2 + 2\\nAnswer: 4\\n\\nQuestion:
    17 + 24\\nAnswer:`` is flagged; a summary prompt whose earlier paragraphs
    never answer the cue (``...\\n\\nParagraph two.\\n\\nSummary:``) is not.
    Cues are matched case-sensitively.
"""

from __future__ import annotations

from collections.abc import Sequence

_COLONS = (":", "\uff1a")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _cue(prompt: str) -> str | None:
    tokens = prompt.split()
    if not tokens:
        return None
    last = tokens[-1]
    if last.endswith(_COLONS) and len(last.rstrip(":\uff1a")) > 0:
        return last
    return None


def _blocks(prompt: str) -> list[str]:
    blocks: list[list[str]] = [[]]
    for line in prompt.split("\n"):
        if line.strip() == "":
            if blocks[-1]:
                blocks.append([])
        else:
            blocks[-1].append(line)
    return ["\n".join(b) for b in blocks if b]


def _answers_cue(block: str, cue: str) -> bool:
    end_of_text = len(block.rstrip())  # an answer is non-whitespace after the cue
    start = 0
    while True:
        i = block.find(cue, start)
        if i < 0 or i + len(cue) >= end_of_text:
            return False
        if i == 0 or block[i - 1].isspace():
            return True
        start = i + 1


def find_embedded_few_shot(prompt: str, examples: Sequence[tuple[str, str]]) -> str | None:
    """Why ``prompt`` already holds a few-shot block, or ``None`` when it does not."""
    flat = _collapse(prompt)
    for i, (ex_prompt, completion) in enumerate(examples):
        rendered = _collapse(ex_prompt + " " + completion)
        if rendered and rendered in flat:
            return (
                f"the prompt already contains few_shot_examples[{i}] as rendered; "
                "remove it from the prompt, the runner prepends examples itself"
            )
    cue = _cue(prompt)
    if cue is None:
        return None
    blocks = _blocks(prompt)
    for block in blocks[:-1]:
        if _answers_cue(block, cue):
            return (
                f"an earlier blank-line-separated block already answers the cue {cue!r} the "
                "prompt ends with; move such examples to few_shot_examples"
            )
    return None
