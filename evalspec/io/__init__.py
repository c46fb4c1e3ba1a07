"""The ground floor: file, line, text and signal helpers that every layer uses.

Nothing here imports any other part of evalspec but :mod:`evalspec.errors`, so any
layer may use it."""
