"""An audit: flagged label issues ranked (with the examples shown when given), duplicate pairs
side by side, shared groups, and an eval's clean vs dirty scores with their intervals."""

from __future__ import annotations

import base64
import io
import math
from typing import Any, Sequence

import numpy as np

from labcoat.report import charts
from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc

#: rows shown per table; the JSON and the ledger keep them all
SHOWN = 30


def _image(row: np.ndarray) -> np.ndarray | None:
    """A row as a 2-D (or H×W×3) image: already one, or a flat square such as 8×8 digits."""
    if row.ndim == 3 and row.shape[0] in (1, 3):  # channels first, as torch keeps them
        row = np.moveaxis(row, 0, -1)
    if row.ndim == 3 and row.shape[-1] == 1:
        row = row[..., 0]
    if row.ndim == 2 or (row.ndim == 3 and row.shape[-1] == 3):
        return row
    side = math.isqrt(row.size) if row.ndim == 1 else 0
    return row.reshape(side, side) if side >= 4 and side * side == row.size else None


def example_html(example: Any) -> str:
    """A thumbnail for an image-like row (a PNG inside the page), else its text, shortened."""
    if isinstance(example, str):
        text = example if len(example) <= 160 else example[:159] + "…"
        return f"<span>{esc(text)}</span>"
    arr = np.asarray(getattr(example, "detach", lambda: example)(), dtype=float)
    img = _image(arr)
    if img is None:
        return f"<code>{esc(np.array2string(arr.ravel()[:8], precision=3))}…</code>"
    import matplotlib.image

    span = float(img.max() - img.min()) or 1.0
    buf = io.BytesIO()
    matplotlib.image.imsave(buf, (img - img.min()) / span, cmap="gray", format="png")
    data = base64.b64encode(buf.getvalue()).decode()
    return (
        '<img class="thumb" alt="example" width="48" height="48" '
        f'style="image-rendering:pixelated" src="data:image/png;base64,{data}">'
    )


def _table(head: Sequence[str], rows: list[list[str]], name: str) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table data-table="{esc(name)}"><tr>{th}</tr>{body}</table></div>'


def _labels(result: Any, examples: Any, labels: Any) -> str:
    head = ["rank", "row", "label quality"] + (["given label"] if labels is not None else [])
    head += ["example"] if examples is not None else []
    rows = []
    for rank, (i, score) in enumerate(zip(result.indices[:SHOWN], result.scores[:SHOWN]), 1):
        name = result.ids[rank - 1] if result.ids is not None else int(i)
        row = [str(rank), esc(name), f"{float(score):.3f}"]
        if labels is not None:
            row.append(esc(labels[int(i)]))
        if examples is not None:
            row.append(example_html(examples[int(i)]))
        rows.append(row)
    more = (
        f'<p class="muted">{result.count - SHOWN} more flagged rows in the JSON.</p>'
        if result.count > SHOWN
        else ""
    )
    return (
        f"<h3>Likely label errors: {result.count} of {result.n} rows</h3>"
        + _table(head, rows, "labels")
        + more
    )


def _duplicates(result: Any, examples: Any, other: Any) -> str:
    pairs = sorted(result.pairs, key=lambda p: -p.similarity)
    head = ["first split", "second split", "similarity", "exact"]
    shown = examples is not None and other is not None
    rows = []
    for p in pairs[:SHOWN]:
        a = f"{p.a}" + (f"<br>{example_html(examples[p.a])}" if shown else "")
        b = f"{p.b}" + (f"<br>{example_html(other[p.b])}" if shown else "")
        rows.append([a, b, f"{p.similarity:.3f}", "yes" if p.exact else "near"])
    within = sum(len(g) for g in result.within.values())
    return (
        f"<h3>{len(result.pairs)} duplicate pairs across the splits ({result.n_a} × {result.n_b} "
        f"rows; {within} groups inside one split)</h3>" + _table(head, rows, "duplicates")
    )


def _contamination(result: Any) -> str:
    head = (
        f"<h3>{result.n_dirty} of {len(result.items)} eval items found in the corpus ("
        f"{esc(result.method)}, n = {result.n})</h3>"
    )
    rows = []
    for name in ("clean", "dirty"):
        d = (result.scores or {}).get(name)
        if d and d.get("ci"):
            rows.append(
                (f"{name} items (n = {d.get('n')})", float(d["mean"]), *map(float, d["ci"][:2]))
            )
    chart = (
        charts.forest(
            "audit-clean-dirty",
            rows,
            title="Eval score on clean and dirty items",
            xlabel="mean score",
        )
        if rows
        else ""
    )
    dirty = [[esc(i.id), f"{i.overlap:.2f}"] for i in result.items if i.dirty][:SHOWN]
    return head + chart + (_table(["item", "overlap"], dirty, "dirty") if dirty else "")


def _groups(result: Any) -> str:
    rows = [[esc(g.group), str(g.n_a), str(g.n_b)] for g in result.shared[:SHOWN]]
    return f"<h3>{len(result.shared)} groups on both sides</h3>" + _table(
        ["group", "rows in first", "rows in second"], rows, "groups"
    )


def audit_section(
    result: Any,
    *,
    examples: Any = None,
    labels: Any = None,
    other: Any = None,
    title: str = "Audit",
    id: str = "audit",
) -> Section:
    """Any audit result; ``examples`` (rows of the data, or of the first split) and ``other``
    (rows of the second split) put the flagged examples on the page; ``labels`` the given labels."""
    kind = type(result).__name__
    if kind == "LabelIssues":
        body = _labels(result, examples, labels)
    elif kind == "Duplicates":
        body = _duplicates(result, examples, other)
    elif kind == "Contamination":
        body = _contamination(result)
    elif kind == "SharedGroups":
        body = _groups(result)
    else:
        raise TypeError(f"audit_section: expected a labcoat.audit result; got {kind}")
    return Section(title, body + findings_list(f.to_dict() for f in result.findings), id=id)
