"""Silent bugs reduced from public reports (each cites its thread); each must be caught."""

from __future__ import annotations

from tests.corpus.registry import Verdict, bug, doctor_verdict  # noqa: F401
