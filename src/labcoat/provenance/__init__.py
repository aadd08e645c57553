"""Provenance: what a run was (command, code, config, data, environment, seeds), by content.

Capture is independent of any storage: the ledger stores a :class:`Provenance`, and anything
else may compare or print one.
"""

from labcoat.provenance.capture import Provenance, capture_provenance, content_digest
from labcoat.provenance.fingerprint import Fingerprint, fingerprint, fingerprint_all
from labcoat.provenance.git import GitState, commit_stat, git_state

__all__ = [
    "Fingerprint",
    "GitState",
    "Provenance",
    "capture_provenance",
    "commit_stat",
    "content_digest",
    "fingerprint",
    "fingerprint_all",
    "git_state",
]
