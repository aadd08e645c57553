"""The doctor's ladder, its positive control's loss curve, its negative control's null
distribution and its self-test, from a :class:`labcoat.doctor.Diagnosis` or its ``to_dict()``."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from labcoat.report import charts
from labcoat.report.ladder import findings_list, status_mark
from labcoat.report.page import Section, esc

LAYERS = ("data", "model", "update", "overfit", "shuffle")
_RANK = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}


def as_data(report: Any) -> dict:
    """A Diagnosis, its dict, or a list of finding dicts (as a ledger holds them) as one dict."""
    if hasattr(report, "to_dict") and not isinstance(report, Mapping):
        data = report.to_dict()
        if hasattr(report, "summary"):
            data.setdefault("summary", report.summary())
        return data
    if isinstance(report, Mapping):
        return dict(report)
    findings = [f.to_dict() if hasattr(f, "to_dict") else dict(f) for f in report]
    failed = next(
        (
            layer
            for layer in LAYERS
            if any(f["layer"] == layer and f["status"] == "fail" for f in findings)
        ),
        None,
    )
    ran = [layer for layer in LAYERS if any(f["layer"] == layer for f in findings)]
    return {"ok": failed is None, "failed_layer": failed, "findings": findings, "layers_run": ran}


def verdict(data: Mapping[str, Any]) -> str:
    if data.get("summary"):
        return str(data["summary"])
    if data.get("ok"):
        return "healthy: no check failed in " + ", ".join(data.get("layers_run", []))
    first = next((f for f in data.get("findings", []) if f.get("status") == "fail"), None)
    if first is None:
        return "labcoat failed its self-test: a mutant of your setup passed its checks"
    return f"broken at the {data.get('failed_layer')} layer: {first['check']}: {first['message']}"


def ladder_html(data: Mapping[str, Any]) -> str:
    findings = data.get("findings", [])
    timings = data.get("timings", {})
    failed_layer = data.get("failed_layer")
    parts = []
    for layer in list(data.get("layers_run") or LAYERS):
        found = [f for f in findings if f.get("layer") == layer]
        status = max((f["status"] for f in found), key=_RANK.__getitem__, default="skip")
        open_ = " open" if layer == failed_layer else ""
        css = " failed" if layer == failed_layer else ""
        took = f' <span class="muted">{timings[layer]:.2f}s</span>' if layer in timings else ""
        parts.append(
            f'<details class="layer{css}" data-layer="{esc(layer)}"{open_}><summary>'
            f"{status_mark(status)} "
            f'{esc(layer)}{took} <span class="muted">{len(found)} checks</span></summary>'
            f"{findings_list(found)}</details>"
        )
    for layer in data.get("layers_not_run", []):
        parts.append(
            f'<div class="layer muted" data-layer="{esc(layer)}" style="padding:.4rem .7rem">'
            f"{esc(layer)}: not run (an earlier layer failed)</div>"
        )
    return "\n".join(parts)


def _finding(data: Mapping[str, Any], check: str) -> Mapping[str, Any] | None:
    return next((f for f in data.get("findings", []) if f.get("check") == check), None)


def overfit_chart(data: Mapping[str, Any]) -> str:
    f = _finding(data, "overfit.batch")
    ev = (f or {}).get("evidence") or {}
    curve = ev.get("loss_curve")
    if not curve:
        return ""
    y = np.asarray([float(v) for v in curve], dtype=float)
    x = np.linspace(0, float(ev.get("steps", len(y) - 1)), len(y))
    return charts.line_chart(
        "overfit-curve",
        {"loss on the tiny batch": (x, y)},
        title="Positive control: memorising a tiny batch",
        ylabel="loss",
        hlines={"floor": _num(ev.get("loss_floor")), "chance": _num(ev.get("chance_loss"))},
        caption=f"{f.get('status')}: {f.get('message')}",
    )


def shuffle_chart(data: Mapping[str, Any]) -> str:
    f = _finding(data, "shuffle.labels")
    ev = (f or {}).get("evidence") or {}
    scores = ev.get("shuffled_scores")
    if not scores:
        return ""
    return charts.distribution(
        "shuffle-null",
        [_num(s) for s in scores],
        marks={"real setup": _num(ev.get("real_score")), "chance": _num(ev.get("chance"))},
        title="Negative control: copies trained on shuffled labels",
        xlabel=str(ev.get("score", "score")),
        caption=f"{f.get('status')}: {f.get('message')}",
    )


def selftest_html(data: Mapping[str, Any]) -> str:
    st = data.get("selftest")
    if not st:
        return ""
    rows = "".join(
        f"<tr><td>{esc(r.get('mutant'))}</td><td>"
        f"{status_mark('pass' if r.get('caught') else 'fail')}</td><td>"
        f"{esc(', '.join(r.get('caught_by') or []))}</td></tr>"
        for r in st.get("results", [])
    )
    head = f"the checks caught {st.get('caught')}/{st.get('mutants')} mutants"
    return (
        f'<h3>Self-test</h3><p class="{"pass" if st.get("ok") else "fail"}">{esc(head)}</p>'
        '<div class="scroll"><table><tr><th>mutant</th><th>caught</th><th>by</th></tr>'
        f"{rows}</table></div>"
    )


def doctor_section(report: Any, *, title: str = "Doctor", id: str = "doctor") -> Section:
    """The ladder first (the failing layer open, at the top), then the controls' charts."""
    data = as_data(report)
    ok = bool(data.get("ok"))
    body = [
        f'<div class="verdict {"pass" if ok else "fail"}" data-verdict="'
        f'{"healthy" if ok else "broken"}">'
        f"{esc(verdict(data))}</div>",
        ladder_html(data),
    ]
    charts_html = [c for c in (overfit_chart(data), shuffle_chart(data)) if c]
    if charts_html:
        body.append('<div class="grid">' + "".join(charts_html) + "</div>")
    body.append(selftest_html(data))
    return Section(title, "\n".join(b for b in body if b), id=id)


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def stored_run(run: Any, findings: list, events: list, results: list, **options: Any) -> Section:
    """One ledger run's doctor findings as the ladder (the doctor's descriptor names this): its
    stored report when it holds one (with the controls' curves), else the findings."""
    if not results:
        return doctor_section(findings, **options)
    from labcoat.report.html import stored_sections

    base = options.get("id", "doctor")
    return Section(options.get("title", "Doctor"), stored_sections(results, id=base), id=base)
