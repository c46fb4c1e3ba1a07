"""The version of evalspec, in the lowest layer: every layer may name it."""

__version__ = "0.1.0"
