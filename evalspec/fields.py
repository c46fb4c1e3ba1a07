"""The task's field names, in spec order.

The validator, its fast path and the schema all read them from here (one
place, so they cannot drift apart). A module of its own, importing nothing,
so the warm ``evalspec validate`` path reads them without loading
:mod:`evalspec.model` (and attrs); :mod:`evalspec.model` re-exports them.
"""

REQUIRED_FIELDS = ("task_id", "category", "prompt", "targets", "metric_name", "post_process")
OPTIONAL_FIELDS = ("few_shot_examples", "metadata")
FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
EXAMPLE_FIELDS = ("prompt", "completion")
"""The keys of one few-shot example."""
