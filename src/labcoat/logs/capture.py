"""Capture inside a process: every line it writes to stdout/stderr, and its ``logging`` records,
each with wall time, rank, local rank, node and the training step, written off its thread.

:func:`install` moves file descriptors 1 and 2 onto pipes. A daemon thread reads them, passes
every byte on to the original descriptors unchanged (the terminal, or the launcher's pipe, sees
exactly what it saw before) and appends one record per line to this process's capture file. The
training thread's cost is one pipe write per print, as without labcoat. C++ output (gloo, NCCL)
goes through the same descriptors and is captured too.

``logging`` records are known before any handler formats them (a log-record factory): the
factory notes (level, logger, step) and the reader gives those to the line that carries the
record's message. A record no handler printed is written as a line of its own (stream ``log``).

The step is what :func:`step` last set or, in a process that never calls it, what
``labcoat.replayable``'s loops (the step that begins, exact) or ``labcoat.watch``'s ``observe()``
(the step it last saw) last knew: at each change the capture notes how many bytes each pipe
holds, so a printed line carries the step it was written in; a logging record carries the step
at its creation.

File format (one file per process, ``p<PID>.log`` in the capture folder): a header line
``#labcoat-logs 1 {json}`` (rank, local rank, group rank, node, pid, world size), then one line
per record: ``time<TAB>stream<TAB>level<TAB>step<TAB>logger<TAB>text``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import select
import socket
import struct
import termios
import threading
import time
from collections import deque
from typing import Any

#: the folder capture files go to (``labcoat run`` sets it for the command it runs)
ENV_DIR = "LABCOAT_LOGS_DIR"
HEADER = "#labcoat-logs 1 "

_STEP: int | None = None
_capture: "_Capture | None" = None
_lock = threading.Lock()


#: who told the step, least to most exact: labcoat.watch's observe() (the step it last saw),
#: labcoat.replayable's loops (the step in progress), the user's own step() call
WATCH, RECORD, USER = 1, 2, 3
_TOLD_BY = 0


def step(n: int | None) -> None:
    """Tell labcoat the training step; later lines and records carry it. Cheap: a store, and
    under capture a note of how many bytes each pipe holds now (those belong to the step
    before), a few microseconds once per step. Once called, it is the step lines carry, whatever
    ``labcoat.watch`` or ``labcoat.replayable`` know."""
    note_step(n, USER)


def note_step(n: int | None, by: int) -> None:
    """The step as ``by`` (:data:`WATCH`, :data:`RECORD`, :data:`USER`) knows it; ignored once a
    more exact teller has spoken in this process."""
    global _STEP, _TOLD_BY
    if by < _TOLD_BY:
        return
    _TOLD_BY = by
    value = None if n is None else int(n)
    if value == _STEP:
        return
    capture = _capture
    if capture is not None:
        capture.mark(value)
    _STEP = value


def current_step() -> int | None:
    return _STEP


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.lstrip("-").isdigit() else None


def identity() -> dict[str, Any]:
    """Who this process is in a distributed job, from the launcher's environment (torchrun,
    torch.distributed, SLURM's and MPI's variables as fallbacks)."""
    rank = _env_int("RANK")
    if rank is None:
        rank = _env_int("SLURM_PROCID") if "SLURM_PROCID" in os.environ else None
    if rank is None:
        rank = _env_int("OMPI_COMM_WORLD_RANK")
    local = _env_int("LOCAL_RANK")
    if local is None:
        local = _env_int("SLURM_LOCALID") or _env_int("OMPI_COMM_WORLD_LOCAL_RANK")
    return {
        "rank": rank,
        "local_rank": local,
        "group_rank": _env_int("GROUP_RANK"),
        "world_size": _env_int("WORLD_SIZE"),
        "node": socket.gethostname(),
        "pid": os.getpid(),
        "ppid": os.getppid(),
    }


class _Capture:
    """The pipes, the reader thread and the file of one process."""

    def __init__(self, directory: str, *, streams: tuple[int, ...] = (1, 2)):
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"p{os.getpid()}.log")
        self.file = open(
            self.path, "a", encoding="utf-8", errors="replace", newline="\n", buffering=1 << 16
        )
        self.file.write(HEADER + json.dumps(identity()) + "\n")
        self.pid = os.getpid()
        # records waiting for the line that prints them; bounded, so a process that logs far
        # faster than anything prints cannot grow it without end
        self.notes: deque[tuple[float, str, str, str, int | None]] = deque(maxlen=100_000)
        self.pipes: dict[int, tuple[int, int, str]] = {}  # read fd -> (original fd, target, name)
        self.partial: dict[int, bytes] = {}
        self.consumed: dict[int, int] = {}  # bytes read from each pipe so far
        self.offsets: dict[int, int] = {}  # stream offset of the first byte in partial
        self.marks: dict[int, deque[tuple[int, int | None]]] = {}  # (offset, step from there)
        self.steps: dict[int, int | None] = {}
        self.reading = threading.Lock()
        self.told: int | None = _STEP  # the step the file last showed
        self.last_time = 0.0
        for fd in streams:
            try:
                original = os.dup(fd)
            except OSError:
                continue  # no such descriptor (a daemon without stderr): nothing to capture
            read, write = os.pipe()
            os.dup2(write, fd)
            os.close(write)
            self.pipes[read] = (original, fd, "stdout" if fd == 1 else "stderr")
            self.partial[read] = b""
            self.consumed[read] = self.offsets[read] = 0
            self.marks[read] = deque()
            self.steps[read] = _STEP
        self.stopping = False
        self.thread = threading.Thread(target=self._read, name="labcoat-logs", daemon=True)
        self.thread.start()

    # -- logging ---------------------------------------------------------------------------
    def note(self, record: logging.LogRecord) -> None:
        """Called for each record as it is created (training thread): one tuple appended."""
        if os.getpid() != self.pid:
            return  # a forked child (a DataLoader worker): its lines reach our pipe, not its notes
        try:
            message = record.getMessage().split("\n", 1)[0]
        except Exception:  # noqa: BLE001 - a record whose message cannot be built is skipped
            return
        self.notes.append((time.time(), message, record.levelname, record.name, _STEP))

    def _annotate(self, text: str) -> tuple[str, str, int | None] | None:
        """The logging record whose message this printed line carries, if one is pending."""
        notes = self.notes
        for i in range(min(len(notes), 16)):
            when, message, level, name, at = notes[i]
            if message and message in text:
                for _ in range(i):  # earlier unmatched records: no handler printed them
                    self._write_note(notes.popleft())
                notes.popleft()
                return level, name, at
        return None

    def _write_note(self, note: tuple[float, str, str, str, int | None]) -> None:
        when, message, level, name, at = note
        self._emit(when, "log", level, at, name, message)

    def _flush_notes(self, older_than: float) -> None:
        notes = self.notes
        while notes and notes[0][0] < older_than:
            self._write_note(notes.popleft())

    # -- steps ---------------------------------------------------------------------------
    def mark(self, value: int | None) -> None:
        """At a step change (training thread): the bytes written so far belong to the step
        before; the reader gives ``value`` to lines that start after them."""
        if os.getpid() != self.pid:
            return  # a forked child has no reader (and may hold a copy of a taken lock)
        with self.reading:
            for read in self.pipes:
                try:
                    waiting = struct.unpack("i", fcntl.ioctl(read, termios.FIONREAD, b"\0" * 4))[0]
                except OSError:
                    waiting = 0
                self.marks[read].append((self.consumed[read] + waiting, value))

    def _step_at(self, read: int, offset: int) -> int | None:
        marks, at = self.marks[read], self.steps[read]
        while marks and marks[0][0] <= offset:
            at = marks.popleft()[1]
        self.steps[read] = at
        return at

    # -- the reader thread ----------------------------------------------------------------
    def _emit(self, when: float, stream: str, level: str, at: int | None, name: str, text: str):
        # the file stays in time order (readers merge files by time): a record written late
        # (a logging record no handler printed) takes the time it is written at
        when = self.last_time = max(when, self.last_time)
        self.file.write(
            f"{when:.6f}\t{stream}\t{level}\t{'' if at is None else at}\t{name}\t{text}\n"
        )

    def _lines(self, read: int, when: float, *, final: bool = False) -> None:
        stream = self.pipes[read][2]
        data = self.partial[read]
        start = self.offsets[read]  # byte offset of data[0] in the stream
        cut = len(data) if final else data.rfind(b"\n") + 1
        if cut <= 0:
            return
        position = 0
        for raw in data[:cut].split(b"\n")[: None if final else -1]:
            at = self._step_at(read, start + position)
            position += len(raw) + 1
            text = raw.decode("utf-8", "replace").rstrip("\r")
            found = self._annotate(text) if self.notes else None
            if found is None:
                self._emit(when, stream, "", at, "", text)
            else:
                self._emit(when, stream, found[0], found[2], found[1], text)
            self.told = at
        self.partial[read] = data[cut:]
        self.offsets[read] = start + cut

    def _read(self) -> None:
        fds = list(self.pipes)
        held: dict[int, bytes] = {}  # pass-through waiting for its line's end
        while fds:
            try:
                ready, _, _ = select.select(fds, [], [], 0.02 if any(held.values()) else 0.5)
            except (OSError, ValueError):
                break
            when = time.time()
            for read in ready:
                with self.reading:
                    chunk = os.read(read, 1 << 16)
                    self.consumed[read] += len(chunk)
                if not chunk:
                    fds.remove(read)
                    continue
                # pass whole lines on, so ranks sharing a terminal do not cut each other's lines
                out = held.get(read, b"") + chunk
                end = out.rfind(b"\n") + 1
                held[read] = out[end:]
                if end:
                    self._write_through(read, out[:end])
                self.partial[read] += chunk
                self._lines(read, when)
            for read, rest in held.items():
                if rest and read not in ready:  # a progress bar, or a prompt: not held longer
                    self._write_through(read, rest)
                    held[read] = b""
            if ready:
                self.file.flush()  # one write per wake-up: a killed rank loses little
            else:
                self._flush_notes(when - 0.5)
                if _STEP != self.told:  # a step began and wrote nothing yet: say which it is
                    self.told = _STEP
                    self._emit(when, "step", "", _STEP, "", "")
                self.file.flush()
                if self.stopping:
                    break
        for read, rest in held.items():
            if rest:
                self._write_through(read, rest)
        self.file.flush()

    def _write_through(self, read: int, data: bytes) -> None:
        try:
            _write_all(self.pipes[read][0], data)
        except OSError:
            pass  # the reader of our output went away; keep capturing

    def close(self) -> None:
        """Put the descriptors back, drain the pipes and close the file (at exit)."""
        for read, (original, fd, _) in list(self.pipes.items()):
            try:
                os.dup2(original, fd)  # closes our pipe's write end: the reader sees its end
            except OSError:
                pass
        self.stopping = True
        self.thread.join(timeout=5.0)
        for read in self.pipes:
            if self.partial.get(read):
                self._lines(read, time.time(), final=True)
        self._flush_notes(float("inf"))
        self.file.flush()
        self.file.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def install(directory: str | os.PathLike[str] | None = None) -> str:
    """Capture this process's output and logging records into ``directory`` (default:
    ``$LABCOAT_LOGS_DIR``, which ``labcoat run`` sets) and return the capture file's path.
    Idempotent; read the folder back with ``labcoat logs FOLDER``."""
    global _capture
    from labcoat.errors import InputError

    with _lock:
        if _capture is not None:
            return _capture.path
        target = os.fspath(directory) if directory is not None else os.environ.get(ENV_DIR)
        if not target:
            raise InputError(
                "labcoat.logs.install(): give a folder, or run the script under `labcoat run` "
                f"(which sets ${ENV_DIR})"
            )
        for stream in ("stdout", "stderr"):  # what Python buffered goes out before the switch
            try:
                getattr(__import__("sys"), stream).flush()
            except (AttributeError, ValueError):
                pass
        _capture = _Capture(target)
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            capture = _capture
            if capture is not None:
                capture.note(record)
            return record

        logging.setLogRecordFactory(factory)
        import atexit

        atexit.register(_close_at_exit)
        return _capture.path


def _close_at_exit() -> None:
    global _capture
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass
    capture, _capture = _capture, None
    if capture is not None:
        capture.close()


def installed() -> str | None:
    """The capture file of this process, or None when nothing is captured."""
    return None if _capture is None else _capture.path


__all__ = [
    "ENV_DIR",
    "RECORD",
    "USER",
    "WATCH",
    "current_step",
    "identity",
    "install",
    "installed",
    "note_step",
    "step",
]
