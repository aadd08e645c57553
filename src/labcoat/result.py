"""The one result protocol every engine's result implements.

An engine (the doctor, the watch, the audit, stats, the scaling fit, replay, verdicts, evals)
returns a :class:`Result`. Whatever it holds, a result answers the same six questions:

* ``findings``: the checks it ran, as :class:`~labcoat.findings.Finding` objects;
* ``ok``: no finding failed (warnings still need a look);
* ``to_dict()``: plain JSON-able data, what ``--json`` prints;
* ``record(ledger=None)``: store the findings in the ledger (``None``: the project's ledger if
  one exists; ``False``: nowhere), returning the row ids;
* ``to_html(path=None)``: one self-contained page;
* ``__rich__()``: the terminal view.

Views are found through the type, never through a table of class names: a subclass names the
function that draws it in ``view`` (rich) and ``section`` (HTML) as ``"module:function"``, so
the result's module never imports rich tables or plotting code, and a subclass inherits its
parent's views unless it declares its own.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar

from labcoat.findings import Finding, worst


def load(ref: str) -> Callable[..., Any]:
    """The object a ``"module:attribute"`` reference names, imported on first use."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


class Result(ABC):
    """What every engine returns; subclasses provide ``findings`` and ``to_dict``."""

    #: the engine whose findings these are; the ledger stores them under this source
    engine: ClassVar[str] = ""
    #: "module:function" drawing this result for the terminal (takes the result)
    view: ClassVar[str | None] = None
    #: "module:function" building this result's HTML page section (takes the result, **options)
    section: ClassVar[str | None] = None
    #: the section's heading when the page draws one result
    title: ClassVar[str] = ""

    #: the findings this result's checks produced, in the order they ran: a property or a
    #: dataclass field of the subclass (a field cannot override an abstract property, so this is
    #: declared, not enforced; ``tests/test_results_contract.py`` checks every engine's result)
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        """True when no finding failed (warnings still need a look)."""
        return worst(self.findings) != "fail"

    @property
    def warnings(self) -> list[Finding]:
        """The findings that warned: suspicious, not proof; a verdict must still name them."""
        return [f for f in self.findings if f.status == "warn"]

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able data (what ``--json`` prints)."""

    def record(self, ledger: Any = None) -> list[int] | None:
        """Store the findings in ``ledger`` (a :class:`labcoat.Ledger`, a path or URL; ``None``:
        the project's ledger if one exists; ``False``: nowhere). Returns the row ids, or
        ``None`` when nothing was recorded."""
        from labcoat.ledger import Ledger

        notebook = Ledger.for_recording(ledger)
        if notebook is None:
            return None
        return notebook.record_findings(self.findings, source=self.engine or "labcoat")

    def to_html(self, path: str | os.PathLike[str] | None = None, **options: Any) -> str:
        """This result as one self-contained HTML page (written to ``path`` when given)."""
        from labcoat.report.html import to_html

        return to_html(self, path, **options)

    def _repr_html_(self) -> str:  # Jupyter's inline display
        return self.to_html()

    def __rich__(self) -> Any:  # rich's protocol
        if self.view is None:
            from labcoat.view import findings_view

            return findings_view(self.findings)
        return load(self.view)(self)


__all__ = ["Result", "load"]
