"""HTML sections for replay and diff results (``result.to_html()``)."""

from __future__ import annotations

from typing import Any

from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f'<div class="scroll"><table><tr>{th}</tr>{body}</table></div>'


def replay_section(result: Any, *, title: str = "Replay", id: str = "replay") -> Section:
    """The findings, then every replayed step: recorded and replayed values side by side."""
    head = (
        f'<p class="meta">run {esc(result.run)} · steps {result.from_step}..{result.to_step} · '
        f"checkpoint {result.checkpoint}</p>"
    )
    rows = []
    for s in result.steps:
        for name in dict.fromkeys([*s["recorded"], *s["replayed"]]):
            a, b = s["recorded"].get(name), s["replayed"].get(name)
            rows.append([s["step"], name, a, b, "" if a == b else "≠"])
    parts = [head, findings_list(f.to_dict() for f in result.findings)]
    parts.append(_table(["step", "name", "recorded", "replayed", ""], rows[:500]))
    for name, values in result.new.items():
        parts.append(f"<h3>hindsight: {esc(name)}</h3>")
        parts.append(_table(["step", "value"], values[:500]))
    return Section(title, "\n".join(parts), id)


def diff_section(result: Any, *, title: str = "Run diff", id: str = "diff") -> Section:
    """The findings, the provenance changes and where the logged values diverge."""
    parts = [
        f'<p class="meta">run {esc(result.a)} vs run {esc(result.b)}</p>',
        findings_list(f.to_dict() for f in result.findings),
        _table(
            ["section", "key", "A", "B"],
            [[r["section"], r["key"], r["a"], r["b"]] for r in result.provenance],
        ),
    ]
    if result.bisect is not None:
        b = result.bisect
        if b.get("module") is None:
            note = b.get("note") or f"no module's output differs through step {b['step']}"
            parts.append(f"<p>bisect: {esc(note)}</p>")
        else:
            where = f"first module that differs at step {b['step']}: {esc(b['module'])}"
            parts.append(f"<p>{where}</p>")
    return Section(title, "\n".join(parts), id)


def group_section(
    result: Any, *, title: str = "Replay (every rank)", id: str = "replay"
) -> Section:
    """Every rank's replay, one after the other."""
    parts = [
        f'<p class="meta">run {esc(result.run)} · {len(result.ranks)} ranks · steps '
        f"{result.from_step}..{result.to_step}</p>",
        findings_list(f.to_dict() for f in result.findings),
    ]
    for rank, res in enumerate(result.ranks):
        parts.append(replay_section(res, title=f"rank {rank}", id=f"{id}-rank{rank}").to_html())
    return Section(title, "\n".join(parts), id)


def rank_diff_section(result: Any, *, title: str = "Rank diff", id: str = "rank-diff") -> Section:
    """The finding, and where the ranks' replicated parameters first differ."""
    parts = [
        f'<p class="meta">run {esc(result.run)} · {result.world_size} ranks · '
        f"{result.tensors} replicated tensors · {len(result.checkpoints)} checkpoints</p>",
        findings_list(f.to_dict() for f in result.findings),
    ]
    if result.first is not None:
        f = result.first
        parts.append(_table(list(f), [[f[k] for k in f]]))
    return Section(title, "\n".join(parts), id)
