"""The ledger: a lab notebook of hypotheses, runs and provenance that can be queried and trusted.

``labcoat.Ledger`` is the entry point (:mod:`labcoat.ledger.ledger`). Underneath, ``store``
keeps rows (SQLite or PostgreSQL, append-only and hash-chained) and ``records`` gives them
their meaning (entries, runs, findings, events); :func:`record` is the one way a result is
saved (:mod:`labcoat.ledger.persist`); provenance capture is :mod:`labcoat.provenance`.
"""

from labcoat.ledger.ledger import ActiveRun, Ledger
from labcoat.ledger.persist import record
from labcoat.ledger.records.entries import VERDICTS, Entry
from labcoat.ledger.records.events import Event
from labcoat.ledger.records.runs import Run
from labcoat.ledger.store.connection import LedgerError, ReadOnlyError
from labcoat.ledger.store.location import default_location
from labcoat.ledger.store.sql import SqlResult
from labcoat.ledger.store.verify import PredictionOrder, VerifyResult
from labcoat.provenance import Fingerprint, fingerprint
from labcoat.provenance.diff import Change, RunDiff

__all__ = [
    "ActiveRun",
    "Change",
    "Entry",
    "Event",
    "Fingerprint",
    "Ledger",
    "LedgerError",
    "PredictionOrder",
    "ReadOnlyError",
    "Run",
    "RunDiff",
    "SqlResult",
    "VERDICTS",
    "VerifyResult",
    "default_location",
    "fingerprint",
    "record",
]
