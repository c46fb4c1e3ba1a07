"""Authoring the spec: the gate a migration must pass (:mod:`~evalspec.authoring.gate`),
``evalspec spec check`` (:mod:`~evalspec.authoring.check`) and ``spec new``
(:mod:`~evalspec.authoring.new`).

These sit above validation because a migration is admitted only when its fixture
validates against the version it makes."""
