"""What a line says about a run: its level when the text shows one, and the signals of a failure
(an error, a traceback's exception, a timeout, an out-of-memory, a non-finite value).

Each signal is a narrow pattern on the text: a word like "timeout" in a healthy line ("timeout
set to 30 s") is not a timeout, "Timed out waiting 5000ms" is. A false alarm costs more than a
miss, so the patterns ask for the shape an error has, not a word it uses.
"""

from __future__ import annotations

import re

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: how bad a level is (unknown: 0)
RANK_OF = {"": 0, "DEBUG": 1, "INFO": 2, "WARNING": 3, "ERROR": 4, "CRITICAL": 5}

_WORD_LEVEL = re.compile(r"\b(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b")
_GLOG = re.compile(r"^\[?([IWEF])\d{4} \d\d:\d\d:\d\d")  # torch/gloo C++: "E1204 12:00:00.1 …"
_PY_WARNING = re.compile(r"\b\w*Warning: ")
_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}

TRACEBACK = "Traceback (most recent call last):"
#: the last line of a traceback: ``pkg.mod.SomeError: message`` (or a bare exception name)
_EXCEPTION = re.compile(
    r"^(?:\[[^\]]*\]:?\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure))(?::|$)"
)
_TIMEOUT = re.compile(
    r"(?i)\btimed out\b|\btimeout(?:error)?:|\bdeadline exceeded\b|watchdog caught|"
    r"\bwait timeout\b|DistStoreError|\bsocket timeout\b"
)
_OOM = re.compile(
    r"(?i)out of memory|OutOfMemoryError|\bMemoryError\b|can't allocate memory|"
    r"cannot allocate memory|\bOOM\b|oom-kill"
)
#: a named value that is not finite: ``loss nan``, ``loss=nan``, ``grad_norm: inf``,
#: ``tensor(nan)``
_NONFINITE = re.compile(
    r"(?i)(?:\b[a-z_][\w./-]*(\s*[=:]\s*|\s+)|tensor\(\s*)([-+]?(?:nan|inf(?:inity)?))(?![\w])"
)
#: a peer went away: what a crash on one rank looks like on the others
_PEER = re.compile(
    r"(?i)connection (?:closed|reset) by peer|broken pipe|peer closed|\bNCCL (?:error|"
    r"communicator was aborted)|ProcessGroup\w* is (?:aborted|destroyed)|"
    r"SIGTERM|signal 15|terminating process|Signal \d+ \(SIG\w+\) received"
)

KINDS = ("error", "exception", "timeout", "oom", "nonfinite")


def level_of(text: str) -> str:
    """The level the text shows (a logging prefix, a glog prefix, a Python warning), or ''."""
    head = text[:80]
    m = _GLOG.match(head)
    if m:
        return _GLOG_LEVEL[m.group(1)]
    m = _WORD_LEVEL.search(head)
    if m:
        word = m.group(1)
        return {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(word, word)
    if _PY_WARNING.search(text):
        return "WARNING"
    return ""


def exception_name(text: str) -> str | None:
    """The exception a traceback's last line names, or None."""
    m = _EXCEPTION.match(text)
    return m.group(1) if m else None


def signals(text: str, level: str) -> list[str]:
    """The failure signals in one line (``KINDS``); an ERROR/CRITICAL level is ``error``."""
    out = []
    if RANK_OF.get(level, 0) >= RANK_OF["ERROR"]:
        out.append("error")
    if _TIMEOUT.search(text):
        out.append("timeout")
    if _OOM.search(text):
        out.append("oom")
    if nonfinite(text):
        out.append("nonfinite")
    return out


def nonfinite(text: str) -> bool:
    """A NaN anywhere it names a value; an Inf unless written as a setting (``max_norm=inf``)."""
    lowered = text.lower()
    if "nan" not in lowered and "inf" not in lowered:
        return False
    for m in _NONFINITE.finditer(text):
        if m.group(2).lower().lstrip("+-") == "nan" or (m.group(1) or "").strip() != "=":
            return True
    return False


def is_peer_loss(text: str) -> bool:
    """The line says a peer (another rank, the launcher) went away or stopped this process."""
    return bool(_PEER.search(text)) or bool(_TIMEOUT.search(text))


__all__ = [
    "KINDS",
    "LEVELS",
    "RANK_OF",
    "TRACEBACK",
    "exception_name",
    "level_of",
    "nonfinite",
    "signals",
]
