"""Evals as code: the project layout, data cards, dataset lint, change reports and gates.

Nothing here is imported by ``import evalspec``; the ``init``, ``lint``,
``diff`` and ``gate`` commands import it when they run.
"""
