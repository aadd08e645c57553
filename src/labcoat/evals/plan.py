"""Choose the items to evaluate: a stratified random subset, checked on the user's own history.

:func:`plan_subset` builds the design from a :class:`~labcoat.evals.history.History` of earlier
models' per-item results:

* ``"stratified"`` (default): items are grouped into clusters the history's models answer alike
  (k-means on difficulty and the leading principal components of the responses), each cluster
  is cut into runs of like difficulty, and one item (more where the budget allows) is drawn at
  random from every run. The estimate is the stratified mean: unbiased by design, whatever
  model is scored, and never less precise than random sampling except by the rounding of the
  allocation.
* ``"irt"``: the same design, with an item response model fitted on the history as a control
  variate (a difference estimator): still unbiased by design, more precise where the history
  predicts which items a new model gets right.
* ``"random"``: plain random sampling, the baseline.

The plan is calibrated leave-models-out: groups of history models are held out, the design is
rebuilt on the rest, and the held-out models' intervals are checked against their full-benchmark
scores. Where they undercover, the plan widens its intervals by the factor that covers
(``calibration["inflation"]``, at most 2).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from labcoat._validation import Interval, OneOf
from labcoat.errors import InputError
from labcoat.evals import _design as D
from labcoat.evals.history import History
from labcoat.evals.irt import ItemModel, crossfit, fit_items
from labcoat.findings import Finding
from labcoat.result import Result

METHODS = ("stratified", "irt", "random")
PLAN_VERSION = 1
#: the most an interval is widened by calibration before the plan warns instead
INFLATION_CAP = 2.0
#: the least the calibration may narrow the design's own intervals
INFLATION_FLOOR = 0.85
#: calibrate to cover this share of the level's misses fewer (0.2 at 95 %: 96 % on the history)
CALIBRATION_MARGIN = 0.2


def n_clusters(budget: int, n_models: int) -> int:
    """Item clusters for a budget: enough strata per cluster (8) to order difficulty within."""
    if n_models < 3:
        return 1
    return int(max(1, min(16, budget // 8)))


@dataclass(frozen=True)
class Design:
    """A stratified design over the ``N`` items: ``strata[i]`` is item i's stratum, ``alloc[h]``
    items are drawn from stratum h, and ``groups[h]`` is h's (collapsed) variance group."""

    strata: np.ndarray
    alloc: np.ndarray
    groups: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.strata, minlength=self.alloc.size)

    @property
    def budget(self) -> int:
        return int(self.alloc.sum())

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One stratified random draw, in random order."""
        return D.draw(self.strata, self.alloc, rng)

    def estimate(
        self,
        y: np.ndarray,
        idx: np.ndarray,
        model: ItemModel | None = None,
        *,
        paired_with: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]:
        """Estimates, standard errors, degrees of freedom and (with a model) the mean residual
        and its se for scores ``y`` ``(len(idx), models)`` on the drawn items ``idx``;
        ``paired_with``: a second model's scores on the same items (the estimate is then of
        the difference)."""
        y = np.asarray(y, dtype=float)
        if y.ndim == 1:
            y = y[:, None]
        ss = self.strata[idx]
        pred_s, pred_t = None, 0.0
        if model is not None:
            pred_s, pred_t = crossfit(model, y, idx, ss)
        if paired_with is not None:
            other = np.asarray(paired_with, dtype=float).reshape(y.shape)
            if model is not None:
                ps_b, pt_b = crossfit(model, other, idx, ss)
                pred_s, pred_t = pred_s - ps_b, pred_t - pt_b
            y = y - other
        residual = None
        if model is not None:
            # the item model's own (cross-fitted) residual, before the slope scales it: a slope
            # below 1 would otherwise show a residual for a model the item model fits well
            r = y - pred_s
            residual = (r.mean(axis=0), r.std(axis=0, ddof=1) / math.sqrt(max(len(idx), 1)))
            # the regression estimator: a useless model gets slope ~0
            slope = _slope(y, pred_s, self.groups[ss])
            pred_s, pred_t = pred_s * slope, pred_t * slope
        est, se, df = D.stratified(
            y, ss, self.sizes, pred_s, pred_t, self.groups, paired=paired_with is not None
        )
        return est, se, df, residual

    def to_dict(self) -> dict[str, Any]:
        return {
            "strata": self.strata.tolist(),
            "alloc": self.alloc.tolist(),
            "groups": self.groups.tolist(),
        }


def _slope(y: np.ndarray, pred: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per model, the pooled within-group regression slope of scores on predictions, clipped
    to [0, 1]: how much of the item model to trust (GREG's estimated coefficient)."""
    yc, pc = y.copy(), pred.copy()
    for g in np.unique(groups):
        m = groups == g
        yc[m] -= y[m].mean(axis=0)
        pc[m] -= pred[m].mean(axis=0)
    den = (pc**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(den > 1e-12, (yc * pc).sum(axis=0) / den, 0.0)
    return np.clip(slope, 0.0, 1.0)


def build_design(
    scores: np.ndarray,
    budget: int,
    method: str = "stratified",
    *,
    clusters: np.ndarray | None = None,
    seed: int = 0,
) -> Design:
    """The design for ``budget`` items over a history's ``scores`` (items x models)."""
    n_items, n_models = scores.shape
    if method == "random":
        strata = np.zeros(n_items, dtype=int)
        return Design(strata, np.array([budget]), np.array([0]))
    if clusters is None:
        c = n_clusters(budget, n_models)
        clusters = D.cluster_strata(scores, c, seed=seed) if c > 1 else None
    # equal sampling fractions: one item per stratum up to half the benchmark, above it one
    # item left out of each (so no stratum is taken whole while its neighbour gets one)
    n_strata = max(1, min(budget, n_items - budget))
    strata = D.difficulty_strata(scores, n_strata, clusters)
    sizes = np.bincount(strata)
    alloc = D.allocate(sizes, budget, minimum=1)
    return Design(strata, alloc, D.collapse(strata, alloc))


@dataclass(frozen=True, eq=False)
class Plan(Result):
    """The items to evaluate and everything :func:`~labcoat.evals.estimate` needs to turn their
    results into a full-benchmark estimate with an interval."""

    engine: ClassVar[str] = "evals"
    view: ClassVar[str] = "labcoat.evals.view:plan_view"
    section: ClassVar[str] = "labcoat.report.sections.evals:evals_section"
    title: ClassVar[str] = "Eval plan"

    method: str
    items: np.ndarray
    design: Design
    chosen: np.ndarray
    level: float
    seed: int
    item_model: ItemModel | None = None
    calibration: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    models: tuple[str, ...] = ()
    history_range: tuple[float, float] = (math.nan, math.nan)

    @property
    def subset(self) -> list[str]:
        """The planned item ids, in the order to evaluate them."""
        return [str(self.items[i]) for i in self.chosen]

    @property
    def n_items(self) -> int:
        return int(self.items.size)

    @property
    def budget(self) -> int:
        return int(self.chosen.size)

    @property
    def inflation(self) -> float:
        return float(self.calibration.get("inflation", 1.0)) if self.calibration else 1.0

    def index(self) -> dict[str, int]:
        return {str(k): i for i, k in enumerate(self.items.tolist())}

    def sequence(self, length: int | None = None) -> np.ndarray:
        """Item indices for a sequential eval: independent uniform draws, with replacement, from
        the whole benchmark (a repeat reuses its result), seeded by the plan."""
        rng = np.random.default_rng([self.seed, 7])
        return rng.integers(0, self.n_items, size=length or 4 * self.n_items)

    @property
    def findings(self) -> list[Finding]:
        from labcoat.evals.checks import findings_for

        return findings_for(self, ("evals.plan.size", "evals.plan.calibration"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            "kind": "labcoat.evals.plan",
            "method": self.method,
            "budget": self.budget,
            "level": self.level,
            "seed": self.seed,
            "source": self.source,
            "models": list(self.models),
            "history_range": list(self.history_range),
            "subset": self.subset,
            "items": [str(i) for i in self.items.tolist()],
            "chosen": self.chosen.tolist(),
            "design": self.design.to_dict(),
            "calibration": self.calibration,
            "item_model": None if self.item_model is None else self.item_model.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }

    def save(self, path: str | Path) -> Path:
        """Write the plan as JSON (what ``labcoat evals plan -o`` writes)."""
        from labcoat._jsonable import jsonable

        p = Path(path)
        p.write_text(json.dumps(jsonable(self.to_dict(), max_items=10**9), allow_nan=False))
        return p

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "plan") -> "Plan":
        if not isinstance(data, dict) or data.get("kind") != "labcoat.evals.plan":
            raise InputError(
                f"{source}: not a labcoat eval plan (no 'kind': 'labcoat.evals.plan'); make one "
                "with `labcoat evals plan HISTORY --budget K -o plan.json`."
            )
        try:
            d = data["design"]
            design = Design(
                np.asarray(d["strata"], dtype=int),
                np.asarray(d["alloc"], dtype=int),
                np.asarray(d["groups"], dtype=int),
            )
            items = np.asarray(data["items"], dtype=object)
            chosen = np.asarray(data["chosen"], dtype=int)
            model = data.get("item_model")
            plan = cls(
                method=str(data["method"]),
                items=items,
                design=design,
                chosen=chosen,
                level=float(data["level"]),
                seed=int(data["seed"]),
                item_model=None if model is None else ItemModel.from_dict(model),
                calibration=dict(data.get("calibration") or {}),
                source=str(data.get("source", "")),
                models=tuple(data.get("models", ())),
                history_range=tuple(data.get("history_range", (math.nan, math.nan))),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{source}: a damaged eval plan ({type(exc).__name__}: {exc}); make it again with "
                "`labcoat evals plan`."
            ) from None
        if design.strata.size != items.size or (chosen >= items.size).any():
            raise InputError(f"{source}: a damaged eval plan (its design does not fit its items).")
        return plan


def load_plan(path: str | Path) -> Plan:
    """A plan written by :meth:`Plan.save` (or ``labcoat evals plan -o``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such plan file; make one with `labcoat evals plan`.")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: could not be read as JSON ({type(exc).__name__}: {exc}).") from None
    return Plan.from_dict(data, str(p))


def as_plan(plan: Any) -> Plan:
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, (str, Path)):
        return load_plan(plan)
    raise InputError(f"`plan` must be a Plan or a plan file's path; got {type(plan).__name__}.")


def plan_subset(
    history: History | Any,
    budget: int,
    *,
    method: str = "stratified",
    level: float = 0.95,
    seed: int = 0,
    clusters: Any = None,
    calibrate: bool = True,
    reps: int = 20,
) -> Plan:
    """Choose ``budget`` items of the history's benchmark to evaluate new models on.

    ``history``: a :class:`History`, or anything :func:`~labcoat.evals.read_history` reads.
    ``method``: ``"stratified"``, ``"irt"`` or ``"random"`` (see the module). ``clusters``:
    optional item cluster labels (one per item, e.g. a subject column) used instead of the
    clusters found in the history. ``calibrate``: check the design leave-models-out on the
    history (``reps`` subsets per held-out fold) and widen intervals where they undercover.
    """
    if not isinstance(history, History):
        from labcoat.evals.history import read_history

        history = read_history(history)
    OneOf(METHODS).check(method, "method")
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    Interval(int, 0).check(seed, "seed")
    budget = Interval(int, 2, history.n_items).check(
        budget, "budget", hint=f"the benchmark has {history.n_items} items."
    )
    scores = history.scores
    if clusters is not None:
        labels = np.asarray(clusters)
        if labels.shape != (history.n_items,):
            raise InputError(
                f"`clusters` must give one label per item ({history.n_items}); got {labels.size}."
            )
        _, clusters = np.unique(labels.astype(str), return_inverse=True)
    design = build_design(scores, budget, method, clusters=clusters, seed=seed)
    rng = np.random.default_rng(seed)
    chosen = design.draw(rng)
    item_model = fit_items(scores) if method == "irt" else None
    calibration: dict[str, Any] = {}
    if calibrate and np.unique(history.groups).size >= 3:
        calibration = calibrate_design(
            history, budget, method, level=level, seed=seed, reps=reps, clusters=clusters
        )
    means = scores.mean(axis=0)
    return Plan(
        method=method,
        items=history.items,
        design=design,
        chosen=chosen,
        level=float(level),
        seed=seed,
        item_model=item_model,
        calibration=calibration,
        source=history.source,
        models=tuple(str(m) for m in history.models),
        history_range=(float(means.min()), float(means.max())),
    )


def calibrate_design(
    history: History,
    budget: int,
    method: str,
    *,
    level: float = 0.95,
    seed: int = 0,
    reps: int = 20,
    folds: int = 5,
    clusters: np.ndarray | None = None,
) -> dict[str, Any]:
    """Leave-models-out on the history: hold out each fold of model groups, rebuild the design
    on the rest, draw ``reps`` subsets, and score the held-out models' intervals against their
    full-benchmark means. Returns the raw coverage, the inflation that makes the intervals
    cover at ``level`` (1 when they already do, at most :data:`INFLATION_CAP`), and the mean
    absolute error beside plain random sampling's."""
    rng = np.random.default_rng([seed, 11])
    groups = np.unique(history.groups)
    k = int(min(folds, groups.size))
    fold_of = dict(zip(rng.permutation(groups).tolist(), np.arange(groups.size) % k))
    fold = np.array([fold_of[g] for g in history.groups.tolist()])
    y_all = history.scores
    truth = y_all.mean(axis=0)
    ratios, errors, errors_random = [], [], []
    for f in range(k):
        held = fold == f
        rest = y_all[:, ~held]
        design = build_design(rest, budget, method, clusters=clusters, seed=seed)
        model = fit_items(rest) if method == "irt" else None
        for _ in range(reps):
            idx = design.draw(rng)
            est, se, df, _ = design.estimate(y_all[idx][:, held], idx, model)
            q = D.t_quantile(level, df)
            err = np.abs(est - truth[held])
            ratios.append(err / np.maximum(q * se, 1e-12))
            errors.append(err)
            ridx = rng.choice(history.n_items, budget, replace=False)
            errors_random.append(np.abs(y_all[ridx][:, held].mean(axis=0) - truth[held]))
    ratios = np.concatenate(ratios)
    # the factor at which held-out history models are covered a little above the level (the
    # collapsed-strata variance overstates, so this may narrow the intervals, never below
    # INFLATION_FLOOR of the design's own)
    need = float(np.quantile(ratios, level + (1.0 - level) * CALIBRATION_MARGIN))
    return {
        "coverage_raw": float(np.mean(ratios <= 1.0)),
        "inflation": float(min(max(INFLATION_FLOOR, need), INFLATION_CAP)),
        "inflation_cap": INFLATION_CAP,
        "mae": float(np.concatenate(errors).mean()),
        "mae_random": float(np.concatenate(errors_random).mean()),
        "folds": k,
        "reps": reps,
        "trials": int(ratios.size),
    }


__all__ = ["METHODS", "Design", "Plan", "as_plan", "build_design", "load_plan", "plan_subset"]
