"""Which raw outputs an extracting post-process rule could not parse.

An extractor that finds nothing, or several different answers, still returns
a string (``""``, or the text unchanged), and the metric then scores it as a
wrong answer. The report counts
these outputs per category, so that a broken extractor (or a model that ignores
the answer format) is not mistaken for a model that answers wrongly.

Which rules extract, and how to tell that one found nothing, is declared on
the rule itself (:attr:`evalspec.PostProcessRule.unparsed`), so a plugin's
extracting rule is counted exactly like a built-in one.
"""

from __future__ import annotations

from evalspec.model import PostProcessRule


def extracts(rule: PostProcessRule) -> bool:
    """True when ``rule`` declares an unparsed-output detector (it extracts something)."""
    return rule.unparsed is not None


def unparsed(rule: PostProcessRule, raw: str) -> bool:
    """True when ``rule`` extracts and could not decide on ``raw``: it found nothing to
    extract, or (a rule such as spec v2's ``mcq``) several different answers."""
    return rule.unparsed is not None and bool(rule.unparsed(raw))
