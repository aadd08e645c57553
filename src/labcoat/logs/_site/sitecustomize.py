"""Started by ``labcoat run`` (this folder is put first on ``PYTHONPATH``): in every Python
process of the command that a launcher made a rank (``RANK`` is set), capture its output and
logging records with :func:`labcoat.logs.install`. Then the ``sitecustomize`` that this one
shadows, if any, runs as it would have."""

import os
import sys


def _start() -> None:
    if not os.environ.get("LABCOAT_LOGS_DIR") or "RANK" not in os.environ:
        return
    try:
        from labcoat.logs.capture import install

        install()
    except Exception as exc:  # noqa: BLE001 - capture must never stop the user's process
        print(f"labcoat: note: logs not captured in this process: {exc}", file=sys.stderr)


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)  # the user's own, shadowed by this file
    spec.loader.exec_module(module)
    sys.modules["sitecustomize"] = module


_start()
_chain()
