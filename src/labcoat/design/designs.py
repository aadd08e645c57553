"""``labcoat.design(factors=...)``: a two-level design that can attribute each effect it plans.

A :class:`Design` is one replicate's runs (a full factorial, a 2^(k−p) fraction, a
Plackett–Burman screen, or the bundle of everything at once), repeated over seeds; it states
what its runs cannot tell apart (aliasing, in words), its resolution, the power of each planned
effect at the seed noise given (or a pilot's), and what one factor at a time would cost for the
same power. Given a budget in runs it picks, among the tables that can estimate the effects
named as needed, the one with the most power for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from labcoat._validation import COUNT, POSITIVE_INT, PROBABILITY, Interval, OneOf
from labcoat.design import effects as fx
from labcoat.design import power as pw
from labcoat.design import tables
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result, check_kind

#: alias statements go up to interactions of this many factors
STATED_ORDER = 3
KINDS = ("full", "fractional", "plackett-burman", "bundle")


def check_factors(factors: Any) -> dict[str, tuple[Any, Any]]:
    """``{name: [low, high]}`` with two distinct levels each (a two-level design)."""
    if not isinstance(factors, Mapping) or len(factors) < 1:
        raise InputError(
            "`factors` must be a mapping of factor name -> [low, high]; got "
            f"{type(factors).__name__ if not isinstance(factors, Mapping) else 'an empty one'}"
        )
    out = {}
    for key, levels in factors.items():
        if not isinstance(key, str) or not key.isidentifier() or key == "seed":
            raise InputError(
                f"factor name {key!r}: expected an identifier other than 'seed' (it names a "
                "column of the results)"
            )
        if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence):
            raise InputError(f"factor {key!r}: expected two levels [low, high]; got {levels!r}")
        if len(levels) != 2 or levels[0] == levels[1]:
            raise InputError(
                f"factor {key!r}: a two-level design needs exactly two distinct levels "
                f"[low, high]; got {list(levels)!r} (split a many-level factor into two-level "
                "contrasts, or screen its extremes first)"
            )
        out[key] = (levels[0], levels[1])
    if len(out) > 15:
        raise InputError(f"`factors`: at most 15 two-level factors; got {len(out)}")
    return out


def pilot_noise(pilot: Any) -> float:
    """The seed standard deviation of a pilot: one configuration's metric over several seeds."""
    values = np.asarray(pilot, dtype=float).ravel()
    if values.size < 2 or not np.isfinite(values).all():
        raise InputError(
            f"`pilot` must hold two or more finite metric values of one configuration over "
            f"seeds; got {values.size} value(s)"
        )
    sd = float(values.std(ddof=1))
    if not sd > 0:
        raise InputError("`pilot`: every seed gave the same value, so the noise is unknown")
    return sd


@dataclass(frozen=True, eq=False)
class Design(Result):
    """A two-level design: its runs, what they alias, and the power of each planned effect."""

    engine: ClassVar[str] = "design"
    KIND: ClassVar[str] = "design.design"
    view: ClassVar[str] = "labcoat.design.view:design_view"
    section: ClassVar[str] = "labcoat.report.sections.design:design_section"
    title: ClassVar[str] = "Design"

    factors: dict[str, tuple[Any, Any]]
    kind: str
    coded: np.ndarray
    seeds: int
    effects: tuple[fx.Effect, ...]
    needed: tuple[fx.Effect, ...]
    blocks: str | None = "seed"
    orders: int | None = None
    noise: float | None = None
    effect_size: float | None = None
    alpha: float = 0.05
    target: float = 0.8
    seed: int = 0
    #: where ``noise`` came from, in words (a pilot, the ledger's earlier runs, or assumed)
    noise_source: str | None = None
    alias_map: dict[fx.Effect, list[fx.Effect]] = field(default_factory=dict)
    partial_map: dict[fx.Effect, list[tuple[fx.Effect, float]]] = field(default_factory=dict)
    resolution: int | None = None
    power_of: dict[fx.Effect, float] = field(default_factory=dict)
    se_of: dict[fx.Effect, float] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    # ---- what the runs are --------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self.factors)

    @property
    def runs_per_seed(self) -> int:
        return len(self.coded)

    @property
    def n_runs(self) -> int:
        return len(self.coded) * self.seeds

    @property
    def n_parameters(self) -> int:
        blocks = self.seeds - 1 if self.blocks == "seed" else 0
        return 1 + len(self.effects) + blocks

    @property
    def df(self) -> int:
        return self.n_runs - self.n_parameters

    @property
    def runs(self) -> list[dict[str, Any]]:
        """Every run in order: ``{factor: level, ..., "seed": s}`` (and ``"order"``, the data
        order from a Latin square over seeds and runs, when ``orders`` is set). Runs are in a
        random order within each seed (``seed``), so time trends do not line up with a factor."""
        rng = np.random.default_rng(self.seed)
        square = tables.latin_orders(self.orders) if self.orders else None
        out = []
        for s in range(self.seeds):
            for i in rng.permutation(len(self.coded)):
                row = {
                    f: self.factors[f][1 if self.coded[i, j] > 0 else 0]
                    for j, f in enumerate(self.factors)
                }
                row["seed"] = s
                if square is not None:
                    row["order"] = int(square[s % self.orders, i % self.orders])
                out.append(row)
        return out

    # ---- what they can tell apart -------------------------------------------------------

    @property
    def aliases(self) -> dict[str, list[str]]:
        """Each planned effect and main effect -> the effects (up to three factors) it cannot
        be told apart from (``"intercept"`` for the mean)."""
        keys = list(dict.fromkeys([*self.effects, *((f,) for f in self.factors)]))
        return {fx.name(e): [fx.name(a) for a in self.alias_map.get(e, [])] for e in keys}

    @property
    def statements(self) -> list[str]:
        """The aliasing in words, one sentence per planned effect that shares its contrast."""
        out = []
        for e in self.effects:
            if self.alias_map.get(e):
                out.append(fx.statement(e, self.alias_map[e]))
            partial = self.partial_map.get(e, [])
            if partial:
                worst = max(partial, key=lambda p: p[1])
                out.append(
                    f"{fx.describe(e)} is partially aliased with {len(partial)} effect(s), most "
                    f"with {fx.describe(worst[0])} (correlation {worst[1]:.2f})"
                )
        return out

    @property
    def power(self) -> dict[str, float]:
        """Planned effect -> power of its test at ``effect_size`` and ``noise`` (empty when
        either is unknown)."""
        return {fx.name(e): p for e, p in self.power_of.items()}

    def effect_of(self, text: str) -> fx.Effect:
        return fx.parse(text, self.names)

    @property
    def ofat(self) -> dict[str, Any] | None:
        """What one factor at a time with seeds needs for the same power on the needed main
        effects: runs, seeds per arm, and this design's share of them."""
        mains = [e for e in self.needed if len(e) == 1]
        if self.noise is None or self.effect_size is None or not mains:
            return None
        powers = [self.power_of.get(e, float("nan")) for e in mains]
        if not all(p == p for p in powers):
            return None
        goal = min(powers)
        runs, per_arm = pw.ofat_runs(
            len(self.factors), self.effect_size, self.noise, goal, self.alpha
        )
        return {"runs": runs, "seeds_per_arm": per_arm, "power": goal, "ratio": self.n_runs / runs}

    def suggestion(self) -> str:
        """The design that would separate the needed effects at the target power, in words."""
        found = recommend(
            self.factors,
            effects=[fx.name(e) for e in self.effects],
            needed=[fx.name(e) for e in self.needed],
            noise=self.noise,
            effect_size=self.effect_size,
            power=self.target,
            alpha=self.alpha,
        )
        if found is None:
            return "no two-level design up to 16 seeds per run separates them"
        return found.describe()

    def describe(self) -> str:
        k = len(self.factors)
        p = k - int(math.log2(self.runs_per_seed)) if self.kind == "fractional" else 0
        label = {
            "full": f"a full 2^{k} factorial",
            "fractional": f"a 2^({k}-{p}) fraction (resolution {fx.roman(self.resolution)})",
            "plackett-burman": f"a {self.runs_per_seed}-run Plackett–Burman screen",
            "bundle": "the bundle (all changes on against none)",
        }[self.kind]
        text = f"{label}: {self.runs_per_seed} runs × {self.seeds} seed(s) = {self.n_runs} runs"
        if self.power_of and self.needed:
            text += f", power {min(self.power_of[e] for e in self.needed):.2f}"
        return text

    # ---- results --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "design": self.kind,
            "factors": {k: list(v) for k, v in self.factors.items()},
            "runs": self.runs,
            "runs_per_seed": self.runs_per_seed,
            "seeds": self.seeds,
            "blocks": self.blocks,
            "orders": self.orders,
            "effects": [fx.name(e) for e in self.effects],
            "needed": [fx.name(e) for e in self.needed],
            "resolution": self.resolution,
            "aliases": self.aliases,
            "statements": self.statements,
            "df": self.df,
            "noise": self.noise,
            "noise_source": self.noise_source,
            "effect_size": self.effect_size,
            "alpha": self.alpha,
            "power_target": self.target,
            "power": self.power,
            "ofat": self.ofat,
            "seed": self.seed,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Design":
        """The design again from its ``to_dict()``: rebuilt from the arguments it keeps (a
        design is a deterministic function of them), so it draws and analyses as a live one."""
        check_kind(cls, data)
        return design(
            data["factors"],
            runs=data["runs_per_seed"],
            seeds=data["seeds"],
            effects=data["effects"],
            needed=data["needed"],
            noise=data["noise"],
            effect_size=data["effect_size"],
            power=data["power_target"],
            alpha=data["alpha"],
            blocks=data["blocks"],
            orders=data["orders"],
            kind=data["design"],
            seed=data["seed"],
        )

    def to_spec(self) -> dict[str, Any]:
        """The arguments that rebuild this design exactly (what a plan seals)."""
        return {
            "factors": {k: list(v) for k, v in self.factors.items()},
            "kind": self.kind,
            "runs": self.runs_per_seed,
            "seeds": self.seeds,
            "effects": [fx.name(e) for e in self.effects],
            "needed": [fx.name(e) for e in self.needed],
            "blocks": self.blocks,
            "orders": self.orders,
            "noise": self.noise,
            "effect_size": self.effect_size,
            "alpha": self.alpha,
            "power": self.target,
            "seed": self.seed,
        }

    def analyse(self, results: Any, *, metric: str = "metric", level: float = 0.95):
        """Estimate every planned effect from ``results`` (see :func:`analyse`)."""
        return analyse(results, design=self, metric=metric, level=level)

    def to_plan(self, metric: str, *, level: float = 0.95):
        """This design as a plan to register before any run
        (:func:`labcoat.design.register`, or :func:`labcoat.verdicts.register`): its factors,
        runs and planned effects, read by ``metric`` (the event kind each run records its
        result under, or the results table's column) with intervals at ``level``."""
        from labcoat.design.plan import DesignPlan

        return DesignPlan.of(self, metric=metric, level=level)


# ---- building ---------------------------------------------------------------------------


def _default_effects(table: tables.Table, names: Sequence[str]) -> tuple[fx.Effect, ...]:
    """Main effects, and every two-factor interaction when the table keeps them clear of each
    other and of the main effects (resolution V or more)."""
    mains = [(f,) for f in names]
    res = fx.resolution(table.coded, names) if table.kind != "bundle" else 1
    if res is None or res >= 5:
        return tuple(mains + fx.words(names, 2)[len(names) :])
    return tuple(mains)


def _build(
    factors: dict[str, tuple[Any, Any]],
    table: tables.Table,
    seeds: int,
    effects: tuple[fx.Effect, ...] | None,
    needed: tuple[fx.Effect, ...] | None,
    *,
    blocks: str | None,
    orders: int | None,
    noise: float | None,
    effect_size: float | None,
    alpha: float,
    power: float,
    seed: int,
    judge: bool = True,
    noise_source: str | None = None,
) -> Design:
    """The design of ``table`` over ``seeds``; ``judge=False`` leaves its checks unrun (a
    search ranks many candidates and judges the one it keeps)."""

    names = list(factors)
    planned = effects if effects is not None else _default_effects(table, names)
    if table.kind == "bundle":
        planned = ((names[0],),) if effects is None else planned
    full, partial = fx.alias_sets(table.coded, names, min(STATED_ORDER, len(names)))
    for e in planned:  # planned effects above the stated order still get their aliases
        if e not in full:
            more_full, more_partial = fx.alias_sets(table.coded, names, len(e))
            full[e], partial[e] = more_full[e], more_partial[e]
    res = fx.resolution(table.coded, names)
    power_of: dict[fx.Effect, float] = {}
    se_of: dict[fx.Effect, float] = {}
    estimable = [e for e in planned if not any(a in planned or a == () for a in full[e])]
    rows = len(table.coded) * seeds
    n_params = 1 + len(planned) + (seeds - 1 if blocks == "seed" else 0)
    df = rows - n_params
    if noise is not None and estimable and len(estimable) == len(planned):
        model = np.tile(fx.contrasts(table.coded, names, planned), (seeds, 1)).astype(float)
        ses = pw.standard_errors(model, noise)
        for e, se in zip(planned, ses):
            se_of[e] = float(se)
            if effect_size is not None:
                power_of[e] = pw.t_power(effect_size, float(se), df, alpha / len(planned))
    d = Design(
        factors=factors,
        kind=table.kind,
        coded=table.coded,
        seeds=seeds,
        effects=tuple(planned),
        needed=tuple(needed if needed is not None else [e for e in planned if len(e) == 1]),
        blocks=blocks if seeds > 1 else None,
        orders=orders,
        noise=noise,
        effect_size=effect_size,
        alpha=alpha,
        target=power,
        seed=seed,
        noise_source=noise_source if noise is not None else None,
        alias_map=full,
        partial_map=partial,
        resolution=res,
        power_of=power_of,
        se_of=se_of,
    )
    return _judged(d) if judge else d


def rebuild(plan: Any) -> Design:
    """The design a :class:`~labcoat.design.plan.DesignPlan` sealed, from its own table (its
    checks run again)."""
    factors = check_factors(plan.factors)
    names = list(factors)
    coded = np.asarray(plan.coded, dtype=int)
    if coded.ndim != 2 or coded.shape[1] != len(names) or not np.isin(coded, (-1, 1)).all():
        raise InputError(
            f"design plan: its table must hold -1/+1 levels of {len(names)} factors per run"
        )
    return _build(
        factors,
        tables.Table(plan.table, coded),
        plan.seeds,
        tuple(fx.parse(e, names) for e in plan.effects),
        tuple(fx.parse(e, names) for e in plan.needed),
        blocks=plan.blocks,
        orders=plan.orders,
        noise=plan.noise,
        effect_size=plan.effect_size,
        alpha=plan.alpha,
        power=plan.power,
        seed=plan.seed,
        noise_source=plan.noise_source,
    )


def _judged(d: Design) -> Design:
    from labcoat.design.checks import CHECKS
    from labcoat.findings import run_check

    d.findings.clear()
    d.findings.extend(run_check(c, d) for c in CHECKS.in_layer("design"))
    return d


def estimable(d: Design) -> bool:
    """Whether no two planned effects (nor one and the mean) share a contrast."""
    return not any(a in d.effects or a == () for e in d.effects for a in d.alias_map[e])


def _score(d: Design) -> tuple:
    """How a budget ranks candidates: estimable at all, then the weakest needed effect's power
    (or, with no noise known, the error degrees of freedom), then fewer runs."""
    ok = estimable(d)
    if d.power_of and d.needed:
        strength = min(d.power_of.get(e, 0.0) for e in d.needed)
    else:
        strength = min(d.df, 30) / 30
    return (ok, d.df >= 1, round(strength, 3), -d.n_runs)


def recommend(
    factors: Mapping[str, Sequence[Any]],
    *,
    effects: Sequence[str] | None = None,
    needed: Sequence[str] | None = None,
    noise: float | None = None,
    effect_size: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    max_seeds: int = 16,
) -> Design | None:
    """The smallest design that estimates the planned ``effects`` (default: main effects) with
    the ``needed`` ones (default: the planned main effects) at ``power`` for ``noise`` and
    ``effect_size``; None when none does within ``max_seeds``. Without noise and effect size:
    the smallest that estimates them with error degrees of freedom."""
    checked = check_factors(factors)
    names = list(checked)
    planned = tuple(fx.parse(e, names) for e in effects) if effects else tuple((f,) for f in names)
    wanted = tuple(fx.parse(e, names) for e in needed) if needed else None
    best = None
    for table in tables.candidates(names):
        for s in range(1, max_seeds + 1):
            d = _build(
                checked,
                table,
                s,
                planned,
                wanted,
                blocks="seed",
                orders=None,
                noise=noise,
                effect_size=effect_size,
                alpha=alpha,
                power=power,
                seed=0,
                judge=False,
            )
            if not estimable(d):
                break
            if d.df < 1:
                continue
            if d.power_of and min(d.power_of.get(e, 0.0) for e in d.needed) < power:
                continue
            if best is None or d.n_runs < best.n_runs:
                best = d
            break
    return best if best is None else _judged(best)


_CONSTRAINTS = {
    "seeds": POSITIVE_INT,
    "runs": Interval(int, 2, none=True),
    "resolution": Interval(int, 3, 8, none=True),
    "budget": Interval(int, 2, none=True),
    "noise": Interval(float, 0.0, low_open=True, none=True),
    "effect_size": Interval(float, 0.0, low_open=True, none=True),
    "power": PROBABILITY,
    "alpha": PROBABILITY,
    "blocks": OneOf(("seed",), none=True),
    "orders": Interval(int, 2, none=True),
    "kind": OneOf(KINDS, none=True),
    "seed": COUNT,
}


def design(
    factors: Mapping[str, Sequence[Any]],
    runs: int | None = None,
    seeds: int = 1,
    resolution: int | None = None,
    budget: int | None = None,
    effects: Sequence[str] | None = None,
    *,
    needed: Sequence[str] | None = None,
    noise: float | None = None,
    pilot: Sequence[float] | None = None,
    effect_size: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    blocks: str | None = "seed",
    orders: int | None = None,
    kind: str | None = None,
    seed: int = 0,
    ledger: Any = None,
    metric: str | None = None,
) -> Design:
    """A two-level design for ``factors`` (``{"lr": [1e-3, 3e-3], ...}``).

    ``runs`` (per seed) picks a fraction of that size (a power of two) or a Plackett–Burman
    screen (a multiple of four); ``resolution`` the smallest fraction at that resolution;
    ``budget`` (total runs, seeds included) the table and seed count with the most power for the
    ``needed`` effects (default: the planned main effects); none of them: the full factorial.
    ``effects`` lists the planned effects (``"lr"``, ``"lr:warmup"``; default: main effects, and
    two-factor interactions where the table keeps them clear). Power needs ``noise`` (the seed
    standard deviation of the metric, or a ``pilot``: one configuration over seeds) and
    ``effect_size`` (the smallest high − low difference worth detecting). ``blocks="seed"``
    analyses each seed as a block (every seed runs the whole table); ``orders`` assigns data
    orders from a Latin square over seeds and runs. ``kind="bundle"`` is every change on against
    none, which can judge the bundle only. ``ledger`` (with ``metric``, the event kind each
    run records its result under) measures the noise from the seed variance of the ledger's
    earlier runs; where they show none, a ``pilot``'s is used, else a stated ``noise``,
    reported as assumed.
    """
    values = dict(
        seeds=seeds, runs=runs, resolution=resolution, budget=budget, noise=noise,
        effect_size=effect_size, power=power, alpha=alpha, blocks=blocks, orders=orders,
        kind=kind, seed=seed,
    )  # fmt: skip
    values = {k: _CONSTRAINTS[k].check(v, k) for k, v in values.items()}
    checked = check_factors(factors)
    names = list(checked)
    source = "assumed (stated, not measured)" if noise is not None else None
    if pilot is not None:
        if noise is not None:
            raise InputError("give `noise` or `pilot`, not both")
        values["noise"] = pilot_noise(pilot)
        source = f"a pilot of {len(np.asarray(pilot).ravel())} seeds"
    if ledger is not None:  # what the ledger's runs show comes first: measured, and on more
        from labcoat.design.noise import ledger_noise

        if not isinstance(metric, str) or not metric:
            raise InputError("`ledger`: give `metric`, the result each earlier run recorded")
        measured = ledger_noise(ledger, metric)
        if measured is not None:
            if values["noise"] is not None:
                given = "the pilot's noise" if pilot is not None else "the stated noise"
                source = f"{measured.describe()}; {given} {values['noise']:.3g} is not used"
            else:
                source = measured.describe()
            values["noise"] = measured.sd
    planned = tuple(fx.parse(e, names) for e in effects) if effects is not None else None
    need = tuple(fx.parse(e, names) for e in needed) if needed is not None else None
    if sum(x is not None for x in (runs, resolution, budget)) > 1:
        raise InputError("give at most one of `runs`, `resolution` and `budget`")
    common = dict(
        blocks=values["blocks"], orders=values["orders"], noise=values["noise"],
        effect_size=values["effect_size"], alpha=values["alpha"], power=values["power"],
        seed=values["seed"], noise_source=source,
    )  # fmt: skip
    k = len(names)
    if values["kind"] == "bundle":
        return _build(checked, tables.bundle(k), values["seeds"], planned, need, **common)
    if budget is not None:
        return _by_budget(checked, values["budget"], planned, need, values["kind"], common)
    table = _table(names, runs, resolution, values["kind"])
    return _build(checked, table, values["seeds"], planned, need, **common)


def _table(names: list[str], runs: int | None, resolution: int | None, kind: str | None):
    k = len(names)
    if kind == "plackett-burman":
        table = tables.plackett_burman(k)
        if runs is not None and runs != table.runs:
            raise InputError(f"a Plackett–Burman screen of {k} factors has {table.runs} runs")
        return table
    if resolution is not None:
        return tables.by_resolution(names, resolution)
    if runs is None or runs == 2**k:
        if runs is None and kind == "fractional":
            raise InputError("a fractional design needs `runs` or `resolution`")
        return tables.full(k)
    if runs > 2**k:
        raise InputError(
            f"`runs` = {runs}: {k} two-level factors have only {2**k} distinct runs; add seeds "
            "for more"
        )
    if runs & (runs - 1) == 0:
        if runs < k + 1:
            raise InputError(
                f"`runs` = {runs} cannot estimate {k} main effects (needs at least {k + 1}); "
                f"use {1 << math.ceil(math.log2(k + 1))}"
            )
        return tables.fractional(names, k - int(math.log2(runs)))
    if runs % 4 == 0:
        table = tables.plackett_burman(k)
        if table.runs == runs:
            return table
    raise InputError(
        f"`runs` = {runs}: expected a power of two (a 2^(k−p) fraction) or "
        f"{tables.plackett_burman(k).runs} (a Plackett–Burman screen)"
    )


def _by_budget(checked, budget, planned, need, kind, common) -> Design:
    names = list(checked)
    best = None
    for table in tables.candidates(names):
        if kind is not None and table.kind != kind:
            continue
        for s in range(1, budget // table.runs + 1):
            d = _build(checked, table, s, planned, need, **common, judge=False)
            if best is None or _score(d) > _score(best):
                best = d
    if best is None:
        raise InputError(
            f"`budget` = {budget} runs is below the smallest design of {len(names)} factors "
            f"({min(t.runs for t in tables.candidates(names))} runs)"
        )
    return _judged(best)


def analyse(
    results: Any,
    *,
    design: Design | None = None,
    factors: Mapping[str, Sequence[Any]] | None = None,
    effects: Sequence[str] | None = None,
    metric: str = "metric",
    seed_column: str = "seed",
    level: float = 0.95,
    alpha: float | None = None,
):
    """Estimate the planned effects of ``design`` (or of ``factors`` and ``effects``) from
    ``results``: one row per run with each factor's level, the seed and the ``metric``. Returns
    a :class:`~labcoat.design.analysis.DesignAnalysis`; where the runs moved planned effects
    together it names the design that would separate them."""
    from dataclasses import replace

    from labcoat.design.analysis import estimate
    from labcoat.design.checks import CHECKS
    from labcoat.findings import run_check

    if design is not None and not isinstance(design, Design):
        raise InputError(f"`design` must be a labcoat Design; got {type(design).__name__}")
    if design is None and factors is None:
        raise InputError("give the `design` the runs followed, or its `factors`")
    out = estimate(
        results,
        design=design,
        factors=None if design is not None else check_factors(factors),
        effects=effects,
        metric=metric,
        seed_column=seed_column,
        level=level,
        alpha=alpha,
    )
    merged = [r for r in out.effects if len(r["members"]) > 1]
    if merged:
        size = design.effect_size if design is not None else None
        if size is None:
            size = max((abs(r["estimate"] or 0.0) for r in merged), default=0.0) or None
        found = recommend(
            design.factors if design is not None else check_factors(factors),
            noise=out.noise,
            effect_size=size,
            power=design.target if design is not None else 0.8,
            alpha=out.alpha,
        )
        out = replace(
            out,
            separating=(
                f"{found.describe()} would separate their main effects"
                if found is not None
                else "no two-level design up to 16 seeds per run would separate them"
            ),
        )
    out.findings.extend(run_check(c, out) for c in CHECKS.in_layer("analysis"))
    return out


__all__ = ["Design", "analyse", "check_factors", "design", "recommend"]
