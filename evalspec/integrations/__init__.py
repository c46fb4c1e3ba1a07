"""evalspec where teams already run evals: adapters for other harnesses.

Each adapter is its own module, imported only when asked for, and needs its
harness's extra (``inspect``: ``pip install 'evalspec-contract[inspect]'``).
Reading other harnesses' run logs for ``evalspec score`` is
:mod:`evalspec.scoring.runlogs`.
"""
