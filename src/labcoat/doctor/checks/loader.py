"""Deprecated: moved to :mod:`labcoat.doctor.checks.dataloader` (this path is kept one release)."""

from labcoat._moved import moved

__getattr__ = moved(__name__, "labcoat.doctor.checks.dataloader")
