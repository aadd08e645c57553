"""The one result protocol every engine's result implements.

An engine (the doctor, the watch, the audit, stats, the scaling fit, replay, verdicts, evals)
returns a :class:`Result`. Whatever it holds, a result answers the same six questions:

* ``findings``: the checks it ran, as :class:`~labcoat.findings.Finding` objects;
* ``ok``: no finding failed (warnings still need a look);
* ``to_dict()``: plain JSON-able data, what ``--json`` prints, headed by the result's
  ``"kind"`` (a stable short name, :attr:`Result.KIND`) and ``"version"``; :func:`from_dict`
  reads it back as the same class;
* ``record(ledger=None)``: store it in the ledger (``None``: the project's ledger if one exists;
  ``False``: nowhere), returning the row ids: a one-line delegate to
  :func:`labcoat.ledger.record`, the one persist path;
* ``to_html(path=None)``: one self-contained page;
* ``__rich__()``: the terminal view.

Views are found through the type, never through a table of class names: a subclass names the
function that draws it in ``view`` (rich) and ``section`` (HTML) as ``"module:function"``, so
the result's module never imports rich tables or plotting code, and a subclass inherits its
parent's views unless it declares its own.
"""

from __future__ import annotations

import functools
import importlib
import os
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, Mapping

from labcoat.errors import InputError
from labcoat.findings import Finding, worst


def load(ref: str) -> Callable[..., Any]:
    """The object a ``"module:attribute"`` reference names, imported on first use."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


class Result(ABC):
    """What every engine returns; subclasses provide ``findings`` and ``to_dict``."""

    #: the engine whose findings these are; the ledger stores them under this source
    engine: ClassVar[str] = ""
    #: the stable short name ``to_dict()`` carries as ``"kind"`` (``"<engine>.<name>"``), by
    #: which :func:`from_dict` finds the class again; every concrete result declares its own
    KIND: ClassVar[str] = ""
    #: the version of the ``to_dict()`` shape, carried as ``"version"``; raise it when a key
    #: changes meaning, and read the older shapes in ``from_dict``
    VERSION: ClassVar[int] = 1
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``to_dict`` is wrapped once so its output starts with the result's
        ``kind`` and ``version``: one place, whatever the subclass writes."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("to_dict")
        if own is not None and not getattr(own, "_tagged", False):
            cls.to_dict = _tagged(own)  # type: ignore[method-assign]

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able data (what ``--json`` prints)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Result":
        """The result ``to_dict()`` gave, read back as this class (its *stored record*): its
        ``to_dict()`` is ``data``, its ``findings`` are the ones ``data`` holds (or that its
        checks state from ``data``), and each key of ``data`` reads as an attribute. What needs
        the data the result was computed from (another level's resampled interval, a
        prediction) is not in the record and raises :class:`AttributeError` naming it. A class
        whose ``to_dict`` is lossless overrides this to rebuild itself."""
        check_kind(cls, data)
        stored = object.__new__(_stored_class(cls))
        object.__setattr__(stored, "_stored", dict(data))
        return stored

    def __getattr__(self, name: str) -> Any:
        # only reached when ordinary lookup failed: a stored record answers from its data
        stored = self.__dict__.get("_stored") if name != "__dict__" else None
        if stored is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name in stored:
            return stored[name]
        raise AttributeError(
            f"{name!r} is not in this stored {type(self).KIND} result (read back from its "
            "to_dict()); it needs the data the result was computed from: compute it again"
        )

    def findings_to_store(self, name: str = "") -> list[Finding]:
        """The findings :func:`labcoat.ledger.record` stores for this result; ``name`` labels
        them. A result stated by a check of its own (a stats comparison, a scaling fit) adds
        that finding here."""
        return list(self.findings)

    def record(self, ledger: Any = None, *, name: str = "") -> list[int] | None:
        """Store this result in ``ledger`` (a :class:`labcoat.Ledger`, a path or URL; ``None``:
        the project's ledger if one exists; ``False``: nowhere); ``name`` labels it. Returns
        the row ids of its findings, or ``None`` when nothing was recorded. The same as
        :func:`labcoat.ledger.record`, which it calls."""
        from labcoat.ledger.persist import record

        return record(self, ledger, name=name)

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


def _tagged(to_dict: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @functools.wraps(to_dict)
    def tagged(self: Result, *args: Any, **kwargs: Any) -> dict[str, Any]:
        stored = self.__dict__.get("_stored")
        if stored is not None:
            return dict(stored)
        data = to_dict(self, *args, **kwargs)
        cls = type(self)
        rest = {k: v for k, v in data.items() if k not in ("kind", "version")}
        return {"kind": cls.KIND, "version": cls.VERSION, **rest}

    tagged._tagged = True  # type: ignore[attr-defined]
    return tagged


@functools.cache
def _stored_class(cls: type[Result]) -> type[Result]:
    """``cls`` as a stored record: its findings are the ones the record holds (or, when its
    ``to_dict()`` keeps none, the ones its checks state from the record), never recomputed
    from data the record lacks. A subclass, so ``isinstance``, ``view`` and ``section`` hold."""

    def findings(self: Result) -> list[Finding]:
        stored = self.__dict__["_stored"]
        if "findings" in stored:
            return [Finding.from_dict(f) for f in stored["findings"] or []]
        return _inherited_findings(cls, self)

    return type(
        cls.__name__,
        (cls,),
        {
            "findings": property(findings),
            "__module__": cls.__module__,
            "__qualname__": f"{cls.__qualname__} (stored)",
            "__doc__": cls.__doc__,
        },
    )


def _inherited_findings(cls: type[Result], result: Result) -> list[Finding]:
    for base in cls.__mro__:
        found = base.__dict__.get("findings")
        if isinstance(found, property):
            return found.__get__(result)
    return []


def check_kind(cls: type[Result], data: Mapping[str, Any]) -> None:
    """Refuse ``data`` that is not a ``cls`` result this labcoat can read (its kind, its
    version), in one line: every ``from_dict`` starts here."""
    if not isinstance(data, Mapping):
        raise InputError(f"{cls.__name__}.from_dict: expected a dict; got {type(data).__name__}")
    if data.get("kind") != cls.KIND:
        raise InputError(
            f"{cls.__name__}.from_dict: expected kind {cls.KIND!r}; got {data.get('kind')!r}"
        )
    version = data.get("version")
    if not isinstance(version, int) or version > cls.VERSION:
        raise InputError(
            f"{cls.__name__}.from_dict: version {version!r} of a {cls.KIND} result, newer than "
            f"this labcoat reads (up to {cls.VERSION}); upgrade labcoat"
        )


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def result_types() -> dict[str, type[Result]]:
    """kind -> class of every concrete :class:`Result` class imported so far (found by
    subclass); two classes declaring one kind is an error."""
    found: dict[str, type[Result]] = {}
    for sub in _subclasses(Result):
        if not sub.KIND or "KIND" not in sub.__dict__:
            continue
        if sub.KIND in found and found[sub.KIND] is not sub:
            raise TypeError(
                f"{found[sub.KIND].__name__} and {sub.__name__} share kind {sub.KIND!r}"
            )
        found[sub.KIND] = sub
    return found


def from_dict(data: Mapping[str, Any]) -> Result:
    """A result's ``to_dict()`` read back as its class, chosen by ``data["kind"]`` among the
    result classes imported so far (:func:`labcoat.engines.load_result` imports every
    engine's first)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise InputError("from_dict: expected a result's to_dict() (a dict with a 'kind')")
    types = result_types()
    cls = types.get(data["kind"])
    if cls is None:
        raise InputError(
            f"from_dict: no result of kind {data['kind']!r} is known; known: "
            f"{', '.join(sorted(types)) or 'none (import the engine first)'}"
        )
    return cls.from_dict(data)


__all__ = ["Result", "check_kind", "from_dict", "load", "result_types"]
