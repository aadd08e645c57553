"""The one way a result is saved: :func:`record`.

Every engine's result goes through here, whoever calls it (``result.record(ledger)``, an engine's
``ledger=`` argument, the CLI): its findings are stored under the engine's name as their
``source``, and its ``to_dict()`` (which names its ``kind`` and ``version``) as one event of
kind ``"result"`` in the same run, so ``labcoat report`` can draw it again through the section
that draws it live. The ledger stores the result; it does not interpret it.
"""

from __future__ import annotations

from typing import Any

#: the event kind a stored result is kept under
RESULT_EVENT = "result"


def record(result: Any, ledger: Any = None, *, name: str = "", run: Any = None) -> list[int] | None:
    """Store ``result`` (a :class:`labcoat.result.Result`) in ``ledger`` (a
    :class:`labcoat.Ledger`, a path or URL; ``None``: the project's ledger if one exists;
    ``False``: nowhere); ``name`` labels it. The findings and the result join ``run`` (or the
    run open in this process); with none, one run named after the engine is recorded for them.
    Returns the findings' row ids, or ``None`` when nothing was recorded. A sink that is not a
    :class:`labcoat.Ledger` (an object with ``record_findings``) gets the findings only.
    """
    from labcoat.errors import InputError
    from labcoat.ledger.ledger import Ledger

    source = getattr(type(result), "engine", "")
    if not source:
        raise InputError(
            f"record: {type(result).__name__} names no engine (its class sets no `engine`), "
            "so its findings would have no source"
        )
    notebook = Ledger.for_recording(ledger)
    if notebook is None:
        return None
    findings = result.findings_to_store(name)
    if not isinstance(notebook, Ledger):
        return notebook.record_findings(findings, source=source)
    run_id = run if run is not None else notebook.current_run_id()
    if run_id is None:
        with notebook.run(name=source) as opened:
            return _store(notebook, result, findings, name, opened.id, source)
    return _store(notebook, result, findings, name, run_id, source)


def _store(
    notebook: Any, result: Any, findings: list, name: str, run: Any, source: str
) -> list[int]:
    ids = notebook.record_findings(findings, run=run, source=source)
    data = result.to_dict()
    notebook.record_event(
        RESULT_EVENT,
        run=run,
        source=source,
        message=name or data.get("kind", ""),
        data={"name": name, "result": data},
    )
    return ids


__all__ = ["RESULT_EVENT", "record"]
