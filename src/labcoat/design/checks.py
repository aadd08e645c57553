"""What the design engine claims, declared once: a design can estimate what it plans to, with
the power it states; an analysis attributes an effect only where its runs can tell it apart."""

from __future__ import annotations

from typing import Any

from labcoat.design.effects import describe, name
from labcoat.findings import CheckRegistry, Outcome, failed, passed, skipped, warned

CHECKS = CheckRegistry("design", ["design", "analysis", "verdict"])


@CHECKS.check(
    "design.estimable",
    layer="design",
    falsifies="every planned effect can be estimated apart from every other planned effect",
    predicts="no two planned effects (nor one and the mean) share a contrast over the runs",
)
def _estimable(d: Any) -> Outcome:
    clash = {
        name(e): [name(a) for a in d.alias_map[e] if a in d.effects or a == ()] for e in d.effects
    }
    clash = {e: a for e, a in clash.items() if a}
    if clash:
        first, others = next(iter(clash.items()))
        return failed(
            f"{len(clash)} planned effect(s) cannot be told apart: {first} = {' = '.join(others)}"
            f"; plan fewer effects, or more runs ({d.suggestion()})",
            aliased=clash,
        )
    return passed(f"all {len(d.effects)} planned effects estimable apart", effects=len(d.effects))


@CHECKS.check(
    "design.error_df",
    layer="design",
    falsifies="the runs leave degrees of freedom to estimate the seed noise",
    predicts="more runs than the planned model has parameters, so every effect gets an interval",
)
def _error_df(d: Any) -> Outcome:
    if d.df < 1:
        return failed(
            f"{d.n_runs} runs for {d.n_parameters} parameters: no degrees of freedom left for "
            "the noise, so no effect gets an interval; add a seed (replicate) or plan fewer "
            "effects",
            df=d.df,
            runs=d.n_runs,
        )
    return passed(f"{d.df} degrees of freedom for the noise", df=d.df)


@CHECKS.check(
    "design.power",
    layer="design",
    falsifies="the design can detect the smallest effect worth detecting",
    predicts="every effect named as needed is detected with the target power",
    severity="warn",
)
def _power(d: Any) -> Outcome:
    if d.noise is None or d.effect_size is None:
        return skipped("no power stated: give noise= (a seed std or pilot=) and effect_size=")
    low = {name(e): p for e, p in d.power_of.items() if e in d.needed and not p >= d.target}
    if low:
        worst = min(low, key=low.get)
        return warned(
            f"{describe(d.effect_of(worst))} has power {low[worst]:.2f} < {d.target:.2f} at "
            f"effect {d.effect_size:g} and noise {d.noise:g} "
            f"({d.noise_source or 'assumed (stated, not measured)'}); {d.suggestion()}",
            low=low,
        )
    shown = min(d.power_of[e] for e in d.needed) if d.needed else float("nan")
    where = d.noise_source or "assumed (stated, not measured)"
    return passed(
        f"every needed effect has power >= {shown:.2f} at noise {d.noise:.3g}, {where}",
        power=shown,
        noise_source=where,
    )


@CHECKS.check(
    "design.analysis.error_df",
    layer="analysis",
    falsifies="the results leave degrees of freedom to estimate the noise",
    predicts="more runs than the fitted model has parameters",
)
def _analysis_df(a: Any) -> Outcome:
    if a.df < 1:
        return failed(
            f"{a.n_runs} runs fit {a.n_parameters} parameters: no residual degrees of freedom, "
            "so no interval or p-value is stated; add seeds or estimate fewer effects (the "
            "half-normal plot still ranks them)",
            df=a.df,
        )
    return passed(f"{a.df} residual degrees of freedom", df=a.df)


@CHECKS.check(
    "design.analysis.attribution",
    layer="analysis",
    falsifies="each planned effect's estimate belongs to that effect alone",
    predicts="no planned effect shares its contrast with another planned or lower-order effect",
    severity="warn",
)
def _attribution(a: Any) -> Outcome:
    merged = [row for row in a.effects if len(row["members"]) > 1]
    if merged:
        sets = "; ".join(row["effect"] for row in merged)
        return warned(
            f"no single intervention's effect can be attributed within {sets}: those changes "
            f"moved together in every run; {a.separating}",
            sets=[row["members"] for row in merged],
        )
    return passed("every planned effect estimated on its own contrast")


@CHECKS.check(
    "design.analysis.runs",
    layer="analysis",
    falsifies="the results are the runs the design planned",
    predicts="every planned run (factor levels × seed) appears once",
    severity="warn",
)
def _runs(a: Any) -> Outcome:
    if a.design is None:
        return skipped("no design given: the analysis reads the runs as they are")
    missing, extra = a.missing_runs, a.extra_runs
    if missing or extra:
        return warned(
            f"{len(missing)} planned run(s) missing and {len(extra)} unplanned; the aliasing "
            "and power are those of the runs given, not of the design",
            missing=missing[:10],
            extra=extra[:10],
        )
    return passed(f"all {a.n_runs} planned runs present")


@CHECKS.check(
    "design.verdict.deviations",
    layer="verdict",
    falsifies="the verdict rests on the runs the sealed design planned, run after it was sealed",
    predicts="every planned run has one result at the design's levels and seed, and no run "
    "was set aside",
    severity="warn",
)
def _deviations(v: Any) -> Outcome:
    if v.deviations:
        kinds = {}
        for d in v.deviations:
            kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
        shown = ", ".join(f"{n} {k}" for k, n in kinds.items())
        return warned(
            f"the runs deviate from the sealed design ({shown}): {v.deviations[0]['message']}; "
            "run the missing planned runs at their levels and seeds, and leave repeats and "
            "extras out of the design (a new design is a new entry)",
            deviations=v.deviations[:10],
        )
    return passed(f"all {v.plan.n_runs} planned runs, each once, after the design was sealed")


__all__ = ["CHECKS"]
