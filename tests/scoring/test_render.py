"""Few-shot rendering."""

from __future__ import annotations

from evalspec import TaskSpec, load_fixtures, render


def test_render_matches_the_seed() -> None:
    task = {
        "prompt": "Question: 17 + 24\nAnswer:",
        "few_shot_examples": [
            {"prompt": "Question: 2 + 2\nAnswer:", "completion": "4"},
            {"prompt": "Question: 3 + 3\nAnswer:", "completion": "6"},
        ],
    }
    assert render(task) == (
        "Question: 2 + 2\nAnswer: 4\n\nQuestion: 3 + 3\nAnswer: 6\n\nQuestion: 17 + 24\nAnswer:"
    )


def test_render_without_examples_is_the_prompt() -> None:
    assert render({"prompt": "Hi:"}) == "Hi:"


def test_render_of_a_taskspec_equals_render_of_its_dict() -> None:
    for task in load_fixtures().tasks:
        assert isinstance(task, TaskSpec)
        assert render(task) == render(task.to_dict())
        assert render(task).endswith(task.prompt)
        assert render(task).count("\n\n") >= len(task.few_shot_examples)
