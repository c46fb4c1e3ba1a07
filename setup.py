"""The optional compiled core (evalspec.validation._core); everything else is in pyproject.toml.

``optional=True``: where no C compiler works, setuptools warns and installs
without it, and the validator uses its pure-Python proof (same verdicts).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "evalspec.validation._core",
            sources=["evalspec/validation/_core.c"],
            optional=True,
        )
    ]
)
