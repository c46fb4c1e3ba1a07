"""The registry: the plugin manager, plugin discovery, the ``[tool.evalspec]`` table
(:mod:`~evalspec.registry.project`), building the vocabulary by replaying the version
table (:mod:`~evalspec.registry.build`), its plain tables and their snapshot.

Nothing is imported here, so the warm ``evalspec validate`` path imports only the
modules it uses."""
