"""Deprecated: moved to :mod:`labcoat.stats.view` (this path is kept one release)."""

from labcoat._moved import moved

__getattr__ = moved(__name__, "labcoat.stats.view")
