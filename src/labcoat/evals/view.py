"""Terminal views of the evals results (imported only to draw them)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table


def _rows(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for k, v in rows:
        table.add_row(k, v)
    return table


def _with_findings(table: Table, result: Any) -> Group:
    from labcoat.view import findings_grid

    return Group(table, findings_grid(result.findings))


def plan_view(plan: Any) -> Group:
    cal = plan.calibration
    rows = [
        ("method", plan.method),
        ("items", f"{plan.subset_size} of {plan.n_items}"),
        ("strata", str(plan.design.alloc.size)),
        ("history", f"{len(plan.models)} models ({plan.source})"),
    ]
    if cal:
        rows += [
            ("held-out coverage", f"{cal['coverage_raw']:.1%} (inflation x{cal['inflation']:.2f})"),
            ("held-out MAE", f"{cal['mae']:.4f} (random sampling: {cal['mae_random']:.4f})"),
        ]
        if "weight" in cal:
            rows.append(
                (
                    "model-based",
                    f"{cal['weight']:.2f} x design-based + {1 - cal['weight']:.2f} x item model "
                    f"(design-based alone: held-out MAE {cal['mae_design']:.4f})",
                )
            )
    shown = ", ".join(plan.subset[:12]) + (", ..." if plan.subset_size > 12 else "")
    rows.append(("evaluate", shown))
    return _with_findings(_rows("Eval plan", rows), plan)


def estimate_view(est: Any) -> Group:
    ci = est.ci
    rows = [
        ("model", est.model or "-"),
        ("score", f"{est.mean:.4f}  [{ci.low:.4f}, {ci.high:.4f}] ({est.level:.0%})"),
        (
            "items",
            f"{est.n} of {est.n_total} ({est.method}); as precise as "
            f"{est.n_effective:.0f} random items",
        ),
        ("detectable", f"a difference of {est.detectable:.3f} (80% power)"),
    ]
    if est.stronger_than_history:  # in the JSON as stronger_than_history: true
        rows.append(
            (
                "history",
                f"stronger than every history model (best {est.history_range[1]:.4f}): the "
                "plan's strata come from weaker models",
            )
        )
    if est.method == "model":
        rows.append(
            (
                "parts",
                f"design-based {est.design_score:.4f}, item model {est.model_score:.4f}, "
                f"weight {est.weight:.2f}" + (" (outside the history)" if est.extrapolated else ""),
            )
        )
    return _with_findings(_rows("Eval estimate", rows), est)


def compare_view(cmp: Any) -> Group:
    ci = cmp.ci
    # the scores the difference is of; a model-based plan's `evals estimate` gives other ones
    basis = f"{cmp.scores_basis}, {cmp.n} items"
    rows = [
        (f"A: {cmp.name_a}", f"{cmp.score_a:.4f} ({basis})"),
        (f"B: {cmp.name_b}", f"{cmp.score_b:.4f} ({basis})"),
        ("A - B", f"{cmp.diff:+.4f}  [{ci.low:+.4f}, {ci.high:+.4f}] ({cmp.level:.0%})"),
        ("decision", cmp.verdict_line),
    ]
    if cmp.items_needed is not None:
        rows.append(("items needed", f"about {cmp.items_needed} of {cmp.n_total}"))
    return _with_findings(_rows("Eval comparison", rows), cmp)


def sequential_view(seq: Any) -> Group:
    ci = seq.ci
    rows = [
        ("mean", f"{seq.mean:.4f}  [{ci.low:.4f}, {ci.high:.4f}] ({seq.level:.0%}, anytime)"),
        ("drawn", f"{seq.n_draws} draws, {seq.n_items} distinct of {seq.n_total} items"),
        ("decision", seq.decision),
    ]
    return _with_findings(_rows("Sequential eval", rows), seq)
