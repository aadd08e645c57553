"""Wrap any command as a recorded run: ``labcoat run -- python train.py ...``.

The run and its provenance are written before the command starts, so a crash of anything,
including labcoat, still leaves the start on record. The command's stdout and stderr are passed
through as they arrive (tee) and the last part is kept in the ledger with the exit status.
Ctrl-C reaches the command (it shares the terminal's process group) and labcoat waits for it to
finish (a second Ctrl-C kills it); SIGTERM sent to labcoat is forwarded. The child learns its run
through
``LABCOAT_RUN_ID`` and ``LABCOAT_LEDGER``, so findings it records join the same run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import IO, Any, Callable, Mapping, Sequence

from labcoat.errors import LabcoatError
from labcoat.ledger.ledger import Ledger
from labcoat.ledger.records.entries import Entry
from labcoat.ledger.store.location import ENV_LEDGER, ENV_RUN_ID

#: how much of the combined output is kept in the ledger (the end is kept)
DEFAULT_MAX_OUTPUT_BYTES = 16 << 20


class CommandNotStarted(LabcoatError):
    """The wrapped command could not be started; exit code as a shell would give it."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class WrappedRun:
    run_id: int
    status: str
    exit_status: int
    duration_s: float
    output_bytes: int
    output_truncated: bool
    #: the ledger the run is recorded in (its location)
    ledger: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "status": self.status,
            "exit_status": self.exit_status,
            "duration_s": self.duration_s,
            "output_bytes": self.output_bytes,
            "output_truncated": self.output_truncated,
            "ledger": self.ledger,
        }

    def __str__(self) -> str:
        return (
            f"run {self.run_id} recorded ({self.status}, exit {self.exit_status}, "
            f"{self.duration_s:.2f} s) in {self.ledger}"
        )


#: called with ("stdout" | "stderr", bytes) for every chunk the command writes (from the pump
#: threads, never the main thread): how ``labcoat logs`` sees the launcher's own output
Tap = Callable[[str, bytes], None]


class _Tail:
    """The last ``limit`` bytes of everything written, from several threads."""

    def __init__(self, limit: int):
        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.total = 0
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.chunks.append(chunk)
            self.size += len(chunk)
            self.total += len(chunk)
            while self.size > self.limit and self.chunks:
                dropped = self.chunks.popleft()
                self.size -= len(dropped)
                if self.size < self.limit:  # keep the tail of the dropped chunk
                    keep = dropped[len(dropped) - (self.limit - self.size) :]
                    self.chunks.appendleft(keep)
                    self.size += len(keep)

    def value(self) -> bytes:
        with self.lock:
            return b"".join(self.chunks)


def _pump(source: IO[bytes], sink: Any, tail: _Tail, tap: Tap | None, name: str) -> None:
    fd = source.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        tail.add(chunk)
        if tap is not None:
            tap(name, chunk)
        buffer = getattr(sink, "buffer", None)
        if buffer is not None:
            sink.flush()
            buffer.write(chunk)
            buffer.flush()
        else:
            sink.write(chunk.decode(errors="replace"))
            sink.flush()
    source.close()


class _Signals:
    """While the child runs: Ctrl-C (which the child receives too, from the terminal) lets it
    finish, a second Ctrl-C kills it; SIGTERM sent to labcoat is passed on to the child."""

    def __init__(self) -> None:
        self.interrupts = 0
        self.proc: subprocess.Popen | None = None
        self.pending: list[int] = []
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():  # only it may set handlers
            for sig, handler in (
                (signal.SIGINT, self._on_sigint),
                (signal.SIGTERM, self._on_sigterm),
            ):
                self.previous[sig] = signal.signal(sig, handler)

    def attach(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        for sig in self.pending:
            proc.send_signal(sig)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.interrupts += 1
        if self.proc is None:  # arrived before the child existed: it is meant for the child
            self.pending.append(signum)
        elif self.interrupts > 1:
            self.proc.kill()

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if self.proc is None:
            self.pending.append(signum)
        else:
            self.proc.send_signal(signum)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _ending(returncode: int, interrupted: bool) -> tuple[str, int]:
    """(status, shell-style exit code) for a child's return code."""
    if returncode == 0:
        return "ok", 0
    if returncode < 0:
        sig = -returncode
        return ("interrupted" if sig == signal.SIGINT else "killed"), 128 + sig
    if interrupted:
        return "interrupted", returncode
    return "failed", returncode


def run_wrapped(
    ledger: Ledger,
    command: Sequence[str],
    *,
    stdout: Any,
    stderr: Any,
    entries: Sequence[Entry] = (),
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    env: Mapping[str, str] | None = None,
    tap: Tap | None = None,
    **capture: Any,
) -> WrappedRun:
    """Record and run ``command``; its output goes to ``stdout``/``stderr`` and into the ledger.
    ``capture`` is what :meth:`Ledger.start_run` takes (name, config, data, seeds, full_hash,
    git). The run is linked to ``entries`` (hypotheses it tests) before the command starts.
    ``env`` is added to the command's environment; ``tap`` sees every chunk of its output."""
    run_id = ledger.start_run(command=command, **capture).id
    for entry in entries:
        ledger.revise(entry, runs=(*entry.runs, run_id))
    env = {**os.environ, **(env or {})}
    env[ENV_LEDGER] = ledger.storage.target
    env[ENV_RUN_ID] = str(run_id)
    env.setdefault("PYTHONUNBUFFERED", "1")  # live output through the pipe
    signals = _Signals()
    signals.install()  # before the child exists, so no signal slips between start and wait
    try:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
            )
        except OSError as exc:
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            error = f"{type(exc).__name__}: {exc}"
            ledger.finish_run(
                run_id, status="failed", exit_status=code, error=error, duration_s=0.0
            )
            raise CommandNotStarted(
                f"cannot start {command[0]!r}: {exc.strerror or exc} (run {run_id} recorded as "
                "failed)",
                code,
            ) from exc
        signals.attach(proc)
        tail = _Tail(max_output_bytes)
        pumps = [
            threading.Thread(
                target=_pump, args=(proc.stdout, stdout, tail, tap, "stdout"), daemon=True
            ),
            threading.Thread(
                target=_pump, args=(proc.stderr, stderr, tail, tap, "stderr"), daemon=True
            ),
        ]
        for t in pumps:
            t.start()
        returncode = proc.wait()
        for t in pumps:
            t.join()
    finally:
        signals.restore()
    duration = time.monotonic() - t0
    status, exit_status = _ending(returncode, signals.interrupts > 0)
    output = tail.value()
    ledger.finish_run(
        run_id,
        status=status,
        exit_status=exit_status,
        error=None if status == "ok" else f"exit status {returncode}",
        output=output,
        duration_s=duration,
    )
    return WrappedRun(
        run_id,
        status,
        exit_status,
        round(duration, 6),
        tail.total,
        tail.total > len(output),
        ledger.location,
    )
