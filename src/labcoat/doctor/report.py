"""Deprecated: moved to :mod:`labcoat.doctor.result` (this path is kept one release)."""

from labcoat._moved import moved

__getattr__ = moved(__name__, "labcoat.doctor.result")
