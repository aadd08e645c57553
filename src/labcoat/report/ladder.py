"""Findings as HTML: one row each, the evidence one click away (a ``<details>`` element)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from labcoat.report.page import STATUS, esc


def status_mark(status: str) -> str:
    mark, css = STATUS.get(status, ("?", "skip"))
    return f'<span class="{css}" data-status="{esc(status)}">{mark} {esc(status)}</span>'


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)) and len(value) > 16:
        shown = ", ".join(_value(v) for v in value[:16])
        return f"[{shown}, … {len(value) - 16} more]"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def evidence_table(evidence: Mapping[str, Any]) -> str:
    if not evidence:
        return '<p class="muted">no evidence recorded</p>'
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td><code>{esc(_value(v))}</code></td></tr>"
        for k, v in evidence.items()
    )
    return f'<div class="scroll"><table class="evidence">{rows}</table></div>'


def finding_html(f: Mapping[str, Any]) -> str:
    """A finding dict (``Finding.to_dict()``): status, check and message; evidence on click."""
    extra = ""
    if f.get("falsifies"):
        extra += (
            f'<p class="muted">falsifies: {esc(f["falsifies"])}<br>predicts: '
            f"{esc(f.get('predicts', ''))}</p>"
        )
    where = ""
    if f.get("step") is not None:
        where += f' <span class="muted">step {esc(f["step"])}</span>'
    if f.get("rank") is not None:
        where += f' <span class="muted">rank {esc(f["rank"])}</span>'
    return (
        f'<details class="finding" data-check="{esc(f.get("check", ""))}" data-status="'
        f'{esc(f.get("status", ""))}">'
        f"<summary>{status_mark(f.get('status', 'skip'))} <b>{esc(f.get('check', ''))}</b>{where}: "
        f"{esc(f.get('message', ''))}</summary>{extra}"
        f"{evidence_table(f.get('evidence') or {})}</details>"
    )


def findings_list(findings: Iterable[Mapping[str, Any]]) -> str:
    return "\n".join(finding_html(f) for f in findings)
