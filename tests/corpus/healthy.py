"""Healthy setups of the kinds people train; each must pass every layer."""

from __future__ import annotations

from tests.corpus.registry import Verdict, doctor_verdict, healthy  # noqa: F401
