"""The folded view: one row per template, in the order templates first appear.

A line every rank writes alike is shown once with its ranks (``[ranks 0-7]``); lines that differ
by rank or by step are shown as their template with the values that vary (a range for numbers,
a few examples otherwise); repeats are counted, not printed. Memory grows with the templates,
not with the lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from labcoat.logs.classify import RANK_OF
from labcoat.logs.templates import parameters

EXAMPLES = 3


@dataclass
class Group:
    template_id: int
    template: str
    first_seq: int
    text: str
    level: str = ""
    count: int = 0
    ranks: set = field(default_factory=set)
    alike: bool = True  # every line had the same text
    slots: list[dict[str, Any]] = field(default_factory=list)
    signal: bool = False

    def add(self, row: Mapping[str, Any]) -> None:
        self.count += 1
        self.ranks.add(row["rank"])
        if RANK_OF.get(row["level"] or "", 0) > RANK_OF.get(self.level, 0):
            self.level = row["level"]
        if row["kinds"] and "traceback" not in row["kinds"]:
            self.signal = True
        if row["text"] == self.text:
            return
        self.alike = False
        values = parameters(row["text"], self.template)
        if not self.slots:
            self.slots = [_slot(v) for v in parameters(self.text, self.template)]
        for i, value in enumerate(values[: len(self.slots)]):
            _fold_value(self.slots[i], value)

    def rendered(self) -> str:
        if self.alike:
            return self.text
        if not self.slots:
            return self.template
        shown = []
        for slot in self.slots:
            if slot["lo"] is not None and slot["lo"] != slot["hi"]:
                shown.append(f"{_num(slot['lo'])}..{_num(slot['hi'])}")
            elif slot["lo"] is not None:
                shown.append(_num(slot["lo"]))
            else:
                more = "…" if slot["more"] else ""
                shown.append("|".join(slot["examples"]) + more)
        return f"{self.template}  ⟨{'; '.join(shown)}⟩"

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "text": self.rendered(),
            "count": self.count,
            "ranks": ranks_label(self.ranks),
            "level": self.level or None,
            "signal": self.signal,
        }


def _slot(value: str) -> dict[str, Any]:
    slot: dict[str, Any] = {"lo": None, "hi": None, "examples": [], "more": False, "text": False}
    _fold_value(slot, value)
    return slot


def _fold_value(slot: dict[str, Any], value: str) -> None:
    number = None
    if not slot["text"]:
        try:
            number = float(value.rstrip(",;:)]"))
        except ValueError:
            slot["text"] = True
    if number is not None and number == number:  # a NaN is an example, not a bound
        slot["lo"] = number if slot["lo"] is None else min(slot["lo"], number)
        slot["hi"] = number if slot["hi"] is None else max(slot["hi"], number)
        return
    slot["lo"] = slot["hi"] = None if slot["text"] else slot["lo"]
    if value not in slot["examples"]:
        if len(slot["examples"]) < EXAMPLES:
            slot["examples"].append(value)
        else:
            slot["more"] = True


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


def ranks_label(ranks: Iterable[Any]) -> str:
    """``ranks 0-3,5`` / ``rank 2`` / ``launcher`` / ``launcher, ranks 0-7``."""
    numbers = sorted(r for r in ranks if r is not None)
    parts = []
    if any(r is None for r in ranks):
        parts.append("launcher")
    if numbers:
        runs, start, prev = [], numbers[0], numbers[0]
        for r in numbers[1:]:
            if r != prev + 1:
                runs.append((start, prev))
                start = r
            prev = r
        runs.append((start, prev))
        spans = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
        parts.append(f"{'rank' if len(numbers) == 1 else 'ranks'} {spans}")
    return ", ".join(parts)


def fold(rows: Iterable[Mapping[str, Any]], templates: Mapping[int, Mapping[str, Any]]) -> list:
    """The folded groups of ``rows`` (``log_lines`` rows in order)."""
    groups: dict[int, Group] = {}
    for row in rows:
        tid = row["template_id"]
        group = groups.get(tid)
        if group is None:
            template = templates.get(tid, {}).get("template", "") or row["text"]
            group = groups[tid] = Group(tid, template, row["seq"], row["text"])
        group.add(row)
    return sorted(groups.values(), key=lambda g: g.first_seq)


__all__ = ["Group", "fold", "ranks_label"]
