"""The ledger: a lab notebook of hypotheses, runs and provenance that can be queried and trusted.

``labcoat.Ledger`` is the entry point; see :mod:`labcoat.ledger.ledger`. Storage is SQLite by
default (``.labcoat/ledger.db`` at the project root) or PostgreSQL, rows are append-only and
hash-chained, and every run records its code, config, data, environment and seeds.
"""

from labcoat.ledger.diff import Change, RunDiff
from labcoat.ledger.entries import VERDICTS, Entry
from labcoat.ledger.events import Event
from labcoat.ledger.fingerprint import Fingerprint, fingerprint
from labcoat.ledger.findings import VERDICT_FOR_STATUS
from labcoat.ledger.ledger import Ledger
from labcoat.ledger.location import default_location
from labcoat.ledger.runs import ActiveRun, Run
from labcoat.ledger.sql import SqlResult
from labcoat.ledger.storage import LedgerError, ReadOnlyError
from labcoat.ledger.verify import PredictionOrder, VerifyResult

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
    "VERDICT_FOR_STATUS",
    "VerifyResult",
    "default_location",
    "fingerprint",
]
