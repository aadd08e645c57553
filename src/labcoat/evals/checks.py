"""What the evals engine claims, declared once: each check falsifies one way a subset's number
could mislead, and runs on the result it guards (a plan, an estimate, a comparison)."""

from __future__ import annotations

from typing import Any

from labcoat.findings import CheckRegistry, Outcome, failed, passed, skipped, warned

CHECKS = CheckRegistry("evals", ["plan", "estimate", "compare", "sequential"])

#: below this many planned items no interval is claimed to hold (the estimate refuses)
MIN_ITEMS = 20
#: below this many degrees of freedom the design-based variance is itself too noisy
MIN_DF = 10
#: the least history a model-based plan needs: model groups (so every leave-models-out fold fits
#: the item model on 9 or more) and items
MODEL_MIN_GROUPS = 12
MODEL_MIN_ITEMS = 50


@CHECKS.check(
    "evals.plan.size",
    layer="plan",
    falsifies="the subset is large enough for an interval that holds",
    predicts=f"at least {MIN_ITEMS} planned items, so the variance can be estimated from them",
)
def _plan_size(plan: Any) -> Outcome:
    n = len(plan.subset)
    if n < MIN_ITEMS:
        return failed(
            f"{n} items planned: too few for an interval that holds; plan at least {MIN_ITEMS} "
            "(estimates from it will refuse)",
            subset_size=n,
            minimum=MIN_ITEMS,
        )
    return passed(f"{n} of {plan.n_items} items planned ({plan.method})", subset_size=n)


@CHECKS.check(
    "evals.plan.calibration",
    layer="plan",
    falsifies="the plan's intervals hold on models it was not built from",
    predicts="held-out history models are covered at the nominal level, with the stated inflation",
    severity="warn",
)
def _plan_calibration(plan: Any) -> Outcome:
    cal = plan.calibration
    if not cal:
        return skipped("not calibrated (calibrate=False or too few model groups)")
    raw = cal["coverage_raw"]
    message = (
        f"leave-models-out on the history: {raw:.1%} of {cal['trials']} held-out intervals "
        f"covered (target {plan.level:.0%})"
    )
    evidence = {k: v for k, v in cal.items()}
    if cal["inflation"] > 1.0:
        message += f"; intervals widened x{cal['inflation']:.2f} to cover"
    elif cal["inflation"] < 1.0:
        message += f"; intervals narrowed x{cal['inflation']:.2f}, still covering"
    elif cal.get("inflation_needed", 1.0) < 1.0 and cal.get("inflation_floor", 0.0) >= 1.0:
        message += (
            f"; not narrowed (x{cal['inflation_needed']:.2f} covered them): "
            f"{cal['history_groups']} model groups are too few to show that a narrower interval "
            f"holds for a new model (it needs {cal['narrowing_min_groups']})"
        )
    if cal["inflation"] >= cal.get("inflation_cap", 2.0):
        message += "; the cap was reached, so intervals may still undercover"
        return warned(message, **evidence)
    return passed(message, **evidence)


@CHECKS.check(
    "evals.plan.model_history",
    layer="plan",
    falsifies="the history is large enough for the model-based method that was asked for",
    predicts="at least MODEL_MIN_GROUPS model groups and MODEL_MIN_ITEMS items, else a stratified "
    "plan",
    severity="warn",
)
def _plan_model_history(plan: Any) -> Outcome:
    asked = plan.requested_method or plan.method
    if asked not in ("model", "auto"):
        return skipped(f"method {plan.method!r} is not model-based")
    if plan.method != "model" and asked == "auto":
        why = plan.calibration.get("auto") or (
            f"{len(plan.models)} history models on {plan.n_items} items (a model-based plan "
            f"needs {MODEL_MIN_GROUPS} model groups and {MODEL_MIN_ITEMS} items, and the "
            "calibration)"
        )
        return skipped(f"method 'auto' chose the stratified design: {why}")
    if plan.method != "model":
        return warned(
            f"a model-based plan needs a history of at least {MODEL_MIN_GROUPS} model groups and "
            f"{MODEL_MIN_ITEMS} items to fit and calibrate the item model; this one has "
            f"{len(plan.models)} models on {plan.n_items} items, so the plan is stratified "
            "(design-based) instead",
            models=len(plan.models),
            items=plan.n_items,
            min_groups=MODEL_MIN_GROUPS,
            min_items=MODEL_MIN_ITEMS,
        )
    cal = plan.calibration
    return passed(
        f"model-based on {len(plan.models)} history models: weight {cal['weight']:.2f} on the "
        f"design-based estimate; held-out MAE {cal['mae']:.4f} (design-based "
        f"{cal['mae_design']:.4f}, random sampling {cal['mae_random']:.4f})",
        weight=cal["weight"],
        mae=cal["mae"],
        mae_design=cal["mae_design"],
    )


@CHECKS.check(
    "evals.estimate.items",
    layer="estimate",
    falsifies="the results score the planned items",
    predicts="every planned item has a result (missing items would bias the estimate)",
)
def _estimate_items(est: Any) -> Outcome:
    if est.n_missing:
        return warned(
            f"{est.n_missing} planned item(s) have no result and were left out; if they failed "
            "more often (timeouts, crashes) the estimate is biased up",
            missing=est.n_missing,
            examples=list(est.missing[:5]),
        )
    return passed(f"all {est.n} planned items scored", n=est.n)


@CHECKS.check(
    "evals.estimate.interval",
    layer="estimate",
    falsifies="the interval is one that holds at its level",
    predicts=f"at least {MIN_ITEMS} items and {MIN_DF} degrees of freedom behind the variance",
)
def _estimate_interval(est: Any) -> Outcome:
    if est.refused:
        return failed(est.reason, n=est.n, df=est.df)
    return passed(
        f"{est.mean:.4f} [{est.ci.low:.4f}, {est.ci.high:.4f}] from {est.n} items "
        f"(as precise as {est.n_effective:.0f} random items)",
        n=est.n,
        df=est.df,
        se=est.se,
    )


@CHECKS.check(
    "evals.estimate.model_fit",
    layer="estimate",
    falsifies="the history's item model describes this model (precision only, never validity)",
    predicts="the mean residual of the item model is within noise of zero",
    severity="warn",
)
def _estimate_fit(est: Any) -> Outcome:
    if est.model_residual is None:
        return skipped("no item model in this plan")
    r, se = est.model_residual
    if se > 0 and abs(r) > 3.0 * se:
        consequence = (
            "the model-based part of the estimate may be off by as much (its interval was "
            "calibrated on history models the item model fits)"
            if est.method == "model"
            else "the estimate corrects it by design, but the subset gains less than planned"
        )
        return warned(
            f"the history's item model is off by {r:+.3f} for this model (>3 se); " + consequence,
            residual=r,
            se=se,
        )
    return passed(f"item model residual {r:+.3f} (se {se:.3f})", residual=r, se=se)


@CHECKS.check(
    "evals.estimate.extrapolation",
    layer="estimate",
    falsifies="a model-based estimate is used only inside the history it was calibrated on",
    predicts="the design-based estimate lies within the history's range of scores; outside it the "
    "interval is widened to contain the design-based one",
    severity="warn",
)
def _estimate_extrapolation(est: Any) -> Outcome:
    if est.method != "model":
        return skipped(f"method {est.method!r} is design-based")
    lo, hi = est.history_range
    if est.extrapolated:
        side = "above" if est.design_score > hi else "below"
        return warned(
            f"the design-based estimate {est.design_score:.4f} lies {side} the history's range "
            f"[{lo:.4f}, {hi:.4f}]: the item model would extrapolate (its ability shrinks "
            f"toward the history's; it predicts {est.model_score:.4f}), so the interval is "
            "widened to contain the design-based one, which holds by design",
            design_score=est.design_score,
            model_score=est.model_score,
            history_range=[lo, hi],
        )
    return passed(
        f"within the history's range [{lo:.4f}, {hi:.4f}]: {est.weight:.2f} x design-based "
        f"{est.design_score:.4f} + {1 - est.weight:.2f} x model-based {est.model_score:.4f}",
        design_score=est.design_score,
        model_score=est.model_score,
        weight=est.weight,
    )


@CHECKS.check(
    "evals.compare.decision",
    layer="compare",
    falsifies="the subset ranks the two models only where its interval allows",
    predicts="a ranking is claimed only when the paired interval excludes 0",
)
def _compare_decision(cmp: Any) -> Outcome:
    if cmp.refused:
        return failed(cmp.reason, n=cmp.n)
    if cmp.decision == "inconclusive":
        return passed(
            f"inconclusive: difference {cmp.diff:+.4f} [{cmp.ci.low:+.4f}, {cmp.ci.high:+.4f}]; "
            f"about {cmp.items_needed} items would tell",
            items_needed=cmp.items_needed,
        )
    return passed(
        f"{cmp.verdict_line}: difference {cmp.diff:+.4f} [{cmp.ci.low:+.4f}, {cmp.ci.high:+.4f}]",
        winner=cmp.winner,
    )


@CHECKS.check(
    "evals.sequential.decided",
    layer="sequential",
    falsifies="the sequential eval stopped on an anytime-valid interval",
    predicts="it stops when the confidence sequence is narrow enough or excludes the threshold",
    severity="warn",
)
def _sequential_done(seq: Any) -> Outcome:
    if not seq.stopped:
        return warned(seq.reason, n_draws=seq.n_draws, n_items=seq.n_items)
    return passed(seq.reason, n_draws=seq.n_draws, n_items=seq.n_items)


def findings_for(result: Any, ids: tuple[str, ...]) -> list:
    return [CHECKS[i].evaluate(result) for i in ids]


__all__ = ["CHECKS", "MIN_DF", "MIN_ITEMS", "MODEL_MIN_GROUPS", "MODEL_MIN_ITEMS", "findings_for"]
