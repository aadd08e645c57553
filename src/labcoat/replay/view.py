"""Terminal views of replay and diff results (rich); the results never import this module."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from labcoat.view import findings_grid


def _short(value: Any, *, tail: bool = False) -> str:
    text = repr(value) if isinstance(value, float) else str(value)
    if len(text) <= 24:
        return text
    return "…" + text[-23:] if tail else text[:23] + "…"


def replay_view(result: Any) -> Any:
    head = Text(
        f"run {result.run}: steps {result.from_step}..{result.to_step} replayed from checkpoint "
        f"{result.checkpoint}"
        + (f" in {len(result.segments)} segments" if len(result.segments) > 1 else "")
    )
    parts: list[Any] = [head, findings_grid(result.findings)]
    if result.raised:
        parts.append(Text(f"the script raised {result.raised}; the replay ends there"))
    if result.first_mismatch is not None:
        m = result.first_mismatch
        table = Table(title="first mismatch", show_edge=False)
        for col in ("step", "name", "recorded", "replayed"):
            table.add_column(col)
        table.add_row(str(m["step"]), m["name"], _short(m["recorded"]), _short(m["replayed"]))
        parts.append(table)
    if result.new:
        table = Table(title="hindsight values (logged now, not when recorded)", show_edge=False)
        table.add_column("name")
        table.add_column("steps")
        table.add_column("first values")
        for name, rows in result.new.items():
            shown = ", ".join(f"{s}: {_short(v)}" for s, v in rows[:4])
            table.add_row(name, str(len(rows)), shown + (" …" if len(rows) > 4 else ""))
        parts.append(table)
    acts = result.probes.get("activations")
    if acts:
        first = acts.get("first_nonfinite")
        parts.append(
            Text(
                "activations: every module's output finite"
                if first is None
                else f"activations: first non-finite output at step {first['step']} in module "
                f"{first['module']!r}"
            )
        )
    watch = result.probes.get("watch")
    if watch is not None:
        alerts = watch.get("alerts") or []
        parts.append(Text(f"watch: {len(alerts)} alert(s)"))
        for a in alerts[:10]:
            parts.append(Text(f"  step {a['step']} {a['kind']}: {a['message']}"))
    return Group(*parts)


def diff_view(result: Any) -> Any:
    parts: list[Any] = [Text(f"run {result.a} vs run {result.b}")]
    if result.provenance:
        table = Table(title="provenance", show_edge=False)
        for col in ("section", "key", "A", "B"):
            table.add_column(col)
        for row in result.provenance[:40]:
            tail = row["section"] == "command"  # argv differ at the end: the flags
            a, b = _short(row["a"], tail=tail), _short(row["b"], tail=tail)
            table.add_row(row["section"], row["key"], a, b)
        parts.append(table)
    else:
        parts.append(Text("provenance: the same"))
    parts.append(findings_grid(result.findings))
    if result.values:
        for name, rows in result.values.items():
            table = Table(title=f"{name} (A vs B)", show_edge=False)
            for col in ("step", "A", "B", ""):
                table.add_column(col)
            for step, a, b in rows[:40]:
                table.add_row(str(step), _short(a), _short(b), "" if a == b else "differs")
            parts.append(table)
    if result.bisect is not None:
        b = result.bisect
        if b.get("module") is None:
            default = f"no module's output differs through step {b['step']}"
            parts.append(Text(f"bisect: {b.get('note') or default}"))
        else:
            where = f"at step {b['step']} the first module that differs is {b['module']!r}"
            parts.append(Text(f"bisect: {where}"))
    return Group(*parts)


def group_view(result: Any) -> Any:
    parts: list[Any] = [
        Text(
            f"run {result.run}: {len(result.ranks)} ranks, steps {result.from_step}.."
            f"{result.to_step} replayed together from checkpoint {result.ranks[0].checkpoint}"
        ),
        findings_grid(result.findings),
    ]
    m = result.first_mismatch
    if m is not None:
        parts.append(
            Text(
                f"first mismatch: rank {m['rank']}, step {m['step']}: {m['name']} was "
                f"{_short(m['recorded'])} when recorded, {_short(m['replayed'])} replayed"
            )
        )
    for rank, res in enumerate(result.ranks):
        if res.raised:
            parts.append(Text(f"rank {rank}: the script raised {res.raised}; the replay ends"))
        if res.new:
            names = ", ".join(sorted(res.new))
            parts.append(Text(f"rank {rank}: hindsight values (logged now, not then): {names}"))
    return Group(*parts)


def rank_diff_view(result: Any) -> Any:
    parts: list[Any] = [
        Text(
            f"run {result.run}: {result.world_size} ranks, {result.tensors} replicated tensors "
            f"compared at {len(result.checkpoints)} checkpoints"
            + (
                f" and steps {result.replayed['from']}..{result.replayed['to']} replayed"
                if result.replayed
                else ""
            )
        ),
        findings_grid(result.findings),
    ]
    return Group(*parts)
