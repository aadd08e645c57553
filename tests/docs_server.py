"""A fork server for the `labcoat` commands in the documents' bash blocks (tests/test_docs.py).

Each command would otherwise start an interpreter and import torch, scikit-learn and labcoat
again (seconds per `labcoat doctor`). The server imports them once; for each command a tiny
client (the `labcoat` on the blocks' PATH) hands it the command's argv, working directory,
environment and its stdin/stdout/stderr, and the server forks a child that runs
``labcoat.cli.main.main(argv)`` there, as ``python -m labcoat`` would, and sends back the exit
code. Nothing a command does reaches the server or the next command: each runs in its own
fork. Linux only (``SOCK_SEQPACKET``, ``fork``); test_docs falls back to ``python -m labcoat``.

    python tests/docs_server.py SOCKET     # serves until killed
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import struct
import sys
import threading

#: imported before serving; what the documents' commands would import each time
PRELOAD = (
    "labcoat.cli.main",
    "labcoat.cli.doctor",
    "labcoat.cli.stats",
    "labcoat.cli.ledger",
    "labcoat.cli.scale",
    "labcoat.cli.audit",
    "labcoat.cli.watch",
    "labcoat.cli.report",
    "labcoat.doctor",
    "labcoat.ledger",
    "sklearn.datasets",
    "sklearn.linear_model",
    "scipy.stats",
    "scipy.optimize",
)

CLIENT = """\
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect({socket_path!r})
request = {{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}
socket.send_fds(s, [json.dumps(request).encode()], [0, 1, 2])
reply = s.recv(4)
sys.exit(struct.unpack("i", reply)[0] if len(reply) == 4 else 3)
"""


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command waits for its own children
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["labcoat", *request["argv"]]
    code = 3
    try:
        from labcoat.cli.main import main

        code = main(request["argv"])
    finally:
        atexit._run_exitfuncs()  # a Ledger closes at exit, as in `python -m labcoat`
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        conn.send(struct.pack("i", code))
        os._exit(code)


def serve(path: str) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    import torch

    torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))])  # torch imports its compiler here
    if threading.active_count() != 1:
        raise SystemExit("docs_server: a preload started threads; forking would be unsafe")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        payload, fds, _, _ = socket.recv_fds(conn, 1 << 22, 3)
        if os.fork() == 0:
            server.close()
            _child(conn, json.loads(payload), fds)
        conn.close()
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    serve(sys.argv[1])
