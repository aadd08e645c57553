"""Choose the items to evaluate: a stratified random subset, checked on the user's own history.

:func:`plan_subset` builds the design from a :class:`~labcoat.evals.history.History` of earlier
models' per-item results:

* ``"auto"`` (default): ``"model"`` where the history is large enough for it, else
  ``"stratified"``; the plan's ``method`` says which was used.
* ``"stratified"``: items are grouped into clusters the history's models answer alike
  (k-means on difficulty and the leading principal components of the responses), each cluster
  is cut into runs of like difficulty, and one item (more where the subset's size allows) is
  drawn at random from every run. The estimate is the stratified mean: unbiased by design, whatever
  model is scored, and never less precise than random sampling except by the rounding of the
  allocation.
* ``"irt"``: the same design, with an item response model fitted on the history as a control
  variate (a difference estimator): still unbiased by design, more precise where the history
  predicts which items a new model gets right.
* ``"model"``: model-based, where the history is large enough (at least
  :data:`MODEL_MIN_GROUPS` model groups and :data:`MODEL_MIN_ITEMS` items; with less the plan
  falls back to ``"stratified"`` and says so in the ``evals.plan.model_history`` finding). The
  same stratified draw; the estimate is ``w * stratified + (1 - w) * p-IRT``, where p-IRT is the
  observed items' sum plus the item model's predicted probabilities of every item not drawn,
  over the benchmark's size (tinyBenchmarks' estimator, Maia Polo et al. 2024). Not unbiased by
  design: the weight ``w`` is the one with the least error on history models held out, and the
  interval is calibrated the same way (below). A model whose design-based estimate lies outside
  the history's range of scores is one the item model would extrapolate to (its ability shrinks
  toward the history's), and the calibration has too few such cases to vouch for an interval:
  its interval is widened to contain the design-based one, which holds by design, and the
  ``evals.estimate.extrapolation`` finding says so (see :meth:`SubsetPlan.combined`).
  :func:`~labcoat.evals.compare` ranks on the design-based paired difference (its interval
  holds by design); :func:`~labcoat.evals.sequential` does not depend on the method.
* ``"random"``: plain random sampling, the baseline.

The plan is calibrated leave-models-out: groups of history models are held out, the design is
rebuilt on the rest, and the held-out models' intervals are checked against their full-benchmark
scores. Where they undercover, the plan widens its intervals by the factor that covers
(``calibration["inflation"]``, at most 2). For ``"model"`` the calibration is what makes the
interval: its folds add one that holds out the strongest groups (so extrapolation is among the
held-out cases), the weight is chosen on the held-out errors, and the interval's factor is the
quantile of ``|estimate - full score| / (t * se)`` over held-out models and draws, taken a little
above the level (:data:`CALIBRATION_MARGIN`) and corrected for the finite number of held-out
models (the quantile at ``q (1 + 1/M)`` for ``M`` held-out models).

Plans are JSON (:data:`PLAN_VERSION` 2; version-1 plans, which have no ``"model"`` method, load
unchanged).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from labcoat._validation import Interval, OneOf, deprecated_alias, deprecated_names, renamed
from labcoat.errors import InputError
from labcoat.evals import _design as D
from labcoat.evals.checks import MODEL_MIN_GROUPS, MODEL_MIN_ITEMS
from labcoat.evals.history import History
from labcoat.evals.irt import ItemModel, crossfit, fit_items
from labcoat.findings import Finding
from labcoat.result import Result

METHODS = ("stratified", "irt", "model", "random")
PLAN_VERSION = 2
#: distinct held-out models outside their history's range needed to weigh the item model there
MODEL_MIN_OUTSIDE = 6
#: the least a model-based plan's calibration may narrow the design's own intervals
MODEL_INFLATION_FLOOR = 0.5
#: the weights on the design-based estimate tried by the calibration of a model-based plan
WEIGHTS = np.linspace(0.0, 1.0, 21)
#: the most an interval is widened by calibration before the plan warns instead
INFLATION_CAP = 2.0
#: the least the calibration may narrow the design's own intervals, on a history that can show it
INFLATION_FLOOR = 0.85
#: calibrate to cover this share of the level's misses fewer (0.2 at 95 %: 96 % on the history)
CALIBRATION_MARGIN = 0.2


def calibration_target(level: float) -> float:
    """The coverage the calibration aims at on held-out history models: the level plus
    :data:`CALIBRATION_MARGIN` of its misses (0.96 at 95 %)."""
    return level + (1.0 - level) * CALIBRATION_MARGIN


def narrowing_min_groups(level: float) -> int:
    """The least model groups a history needs before its calibration may narrow an interval
    below the design's own: ``q / (1 - q)`` for the target ``q`` (24 at 95 %).

    Held-out models are the calibration's units (the draws of one model share its bias): with
    ``M`` of them, the quantile that covers a new model at ``q`` is the ``(M + 1) q``-th smallest
    of ``M`` (the conformal, finite-sample one), which exists only when ``M >= q / (1 - q)``.
    Below that the history cannot show that a new model is covered by a narrower interval,
    only that one is not (so widening stays allowed)."""
    q = calibration_target(level)
    return int(math.ceil(q / (1.0 - q) - 1e-9))


def inflation_floor(history: History, level: float, floor: float = INFLATION_FLOOR) -> float:
    """The least calibrated factor the history vouches for: ``floor`` on a history of at least
    :func:`narrowing_min_groups` model groups, else 1 (never narrower than the design)."""
    return floor if np.unique(history.groups).size >= narrowing_min_groups(level) else 1.0


def n_clusters(subset_size: int, n_models: int) -> int:
    """Item clusters for a subset: enough strata per cluster (8) to order difficulty within."""
    if n_models < 3:
        return 1
    return int(max(1, min(16, subset_size // 8)))


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
    def subset_size(self) -> int:
        """Items drawn."""
        return int(self.alloc.sum())

    budget = deprecated_alias("budget", "subset_size")

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
    subset_size: int,
    method: str = "stratified",
    *,
    clusters: np.ndarray | None = None,
    seed: int = 0,
) -> Design:
    """The design for ``subset_size`` items over a history's ``scores`` (items x models)."""
    n_items, n_models = scores.shape
    if method == "random":
        strata = np.zeros(n_items, dtype=int)
        return Design(strata, np.array([subset_size]), np.array([0]))
    if clusters is None:
        c = n_clusters(subset_size, n_models)
        clusters = D.cluster_strata(scores, c, seed=seed) if c > 1 else None
    # equal sampling fractions: one item per stratum up to half the benchmark, above it one
    # item left out of each (so no stratum is taken whole while its neighbour gets one)
    n_strata = max(1, min(subset_size, n_items - subset_size))
    strata = D.difficulty_strata(scores, n_strata, clusters)
    sizes = np.bincount(strata)
    alloc = D.allocate(sizes, subset_size, minimum=1)
    return Design(strata, alloc, D.collapse(strata, alloc))


@dataclass(frozen=True, eq=False)
class SubsetPlan(Result):
    """The items to evaluate and everything :func:`~labcoat.evals.estimate` needs to turn their
    results into a full-benchmark estimate with an interval."""

    KIND = "evals.plan"
    VERSION = PLAN_VERSION

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
    requested_method: str = ""

    @property
    def subset(self) -> list[str]:
        """The planned item ids, in the order to evaluate them."""
        return [str(self.items[i]) for i in self.chosen]

    @property
    def n_items(self) -> int:
        return int(self.items.size)

    @property
    def subset_size(self) -> int:
        """The planned items' number (``n_items`` is the benchmark's)."""
        return int(self.chosen.size)

    budget = deprecated_alias("budget", "subset_size")

    @property
    def inflation(self) -> float:
        return float(self.calibration.get("inflation", 1.0)) if self.calibration else 1.0

    @property
    def design_inflation(self) -> float:
        """The calibrated factor of the design-based intervals (for a model-based plan, those of
        its fallback and of :func:`~labcoat.evals.compare`)."""
        if self.method == "model" and self.calibration:
            return float(self.calibration.get("inflation_design", 1.0))
        return self.inflation

    @property
    def weight(self) -> float:
        """A model-based plan's weight on the design-based estimate (1: design-based only)."""
        return float(self.calibration.get("weight", 1.0)) if self.method == "model" else 1.0

    def combined(
        self, y: np.ndarray, idx: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A model-based plan's estimates of models scoring ``y`` ``(len(idx), models)`` on the
        drawn items ``idx``: ``(estimate, se, df, inflation, extrapolated, design estimate,
        model estimate)``, one entry per model.

        Inside the history's range the estimate is ``w s + (1 - w) m`` with the calibrated
        factor. Outside it (judged by the design-based ``s``) the calibration has too few cases
        to trust, so the interval is made to contain the design-based one, which holds by
        design: the estimate is ``w_out s + (1 - w_out) m`` (``w_out`` from the held-out models
        that lay outside their history, 1 when there were too few) and the half-width is the
        design-based one plus ``|estimate - s|``."""
        y = np.asarray(y, dtype=float)
        if y.ndim == 1:
            y = y[:, None]
        s, se, df, _ = self.design.estimate(y, idx)
        m = self.item_model.expected_score(y, idx)
        lo, hi = self.history_range
        outside = (s < lo) | (s > hi)
        w = self.weight
        w_out = float(self.calibration.get("weight_outside", 1.0))
        est = np.where(outside, w_out * s + (1.0 - w_out) * m, w * s + (1.0 - w) * m)
        half = np.maximum(D.t_quantile(self.level, df) * se, 1e-12)
        widened = self.design_inflation + np.abs(est - s) / half
        inflation = np.where(outside, widened, self.inflation)
        return est, se, df, inflation, outside, s, m

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

        return findings_for(
            self, ("evals.plan.size", "evals.plan.calibration", "evals.plan.model_history")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "requested_method": self.requested_method or self.method,
            "subset_size": self.subset_size,
            "budget": self.subset_size,  # the old key, one release (docs/deprecations.md)
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
    def from_dict(cls, data: dict[str, Any], source: str = "plan") -> "SubsetPlan":
        # "labcoat.evals.plan": what plan files said before every result named its kind
        if not isinstance(data, dict) or data.get("kind") not in (cls.KIND, "labcoat.evals.plan"):
            raise InputError(
                f"{source}: not a labcoat eval plan (no 'kind': 'evals.plan'); make one "
                "with `labcoat evals plan HISTORY --subset-size K -o plan.json`."
            )
        version = data.get("version", 1)
        if not isinstance(version, int) or version > PLAN_VERSION:
            raise InputError(
                f"{source}: an eval plan of version {version!r}, newer than this labcoat reads "
                f"(up to {PLAN_VERSION}); upgrade labcoat or make the plan again."
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
                requested_method=str(data.get("requested_method", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{source}: a damaged eval plan ({type(exc).__name__}: {exc}); make it again with "
                "`labcoat evals plan`."
            ) from None
        if design.strata.size != items.size or (chosen >= items.size).any():
            raise InputError(f"{source}: a damaged eval plan (its design does not fit its items).")
        if plan.method not in METHODS or (
            plan.method == "model" and (plan.item_model is None or "weight" not in plan.calibration)
        ):
            raise InputError(
                f"{source}: a damaged eval plan (method {plan.method!r} without what it needs); "
                "make it again with `labcoat evals plan`."
            )
        return plan


def load_plan(path: str | Path) -> SubsetPlan:
    """A plan written by :meth:`SubsetPlan.save` (or ``labcoat evals plan -o``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such plan file; make one with `labcoat evals plan`.")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: could not be read as JSON ({type(exc).__name__}: {exc}).") from None
    return SubsetPlan.from_dict(data, str(p))


def as_plan(plan: Any) -> SubsetPlan:
    if isinstance(plan, SubsetPlan):
        return plan
    if isinstance(plan, (str, Path)):
        return load_plan(plan)
    raise InputError(f"`plan` must be a Plan or a plan file's path; got {type(plan).__name__}.")


@renamed(reps="n_resamples", budget="subset_size")
def plan_subset(
    history: History | Any,
    subset_size: int,
    *,
    method: str = "auto",
    level: float = 0.95,
    seed: int = 0,
    clusters: Any = None,
    calibrate: bool = True,
    n_resamples: int = 20,
) -> SubsetPlan:
    """Choose ``subset_size`` items of the history's benchmark to evaluate new models on.

    ``history``: a :class:`History`, or anything :func:`~labcoat.evals.read_history` reads.
    ``method``: ``"auto"`` (the default: ``"model"`` where the history is large enough,
    ``calibrate`` is on and the model-based estimate pays on held-out history models, else
    ``"stratified"``), ``"stratified"``, ``"irt"``, ``"model"`` or
    ``"random"`` (see the module); ``"model"`` falls back to ``"stratified"`` on a history
    smaller than :data:`MODEL_MIN_GROUPS` model groups or :data:`MODEL_MIN_ITEMS` items (the plan's
    ``requested_method`` keeps what was asked, and its ``evals.plan.model_history`` finding
    warns). ``clusters``: optional item cluster labels (one per item, e.g. a subject column)
    used instead of the clusters found in the history. ``calibrate``: check the design
    leave-models-out on the history (``n_resamples`` subsets drawn per held-out fold) and widen
    intervals where they undercover; a model-based plan needs it (its weight and interval come
    from it).
    """
    if not isinstance(history, History):
        from labcoat.evals.history import read_history

        history = read_history(history)
    OneOf(("auto", *METHODS)).check(method, "method")
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    Interval(int, 0).check(seed, "seed")
    subset_size = Interval(int, 2, history.n_items).check(
        subset_size, "subset_size", hint=f"the benchmark has {history.n_items} items."
    )
    scores = history.scores
    if clusters is not None:
        labels = np.asarray(clusters)
        if labels.shape != (history.n_items,):
            raise InputError(
                f"`clusters` must give one label per item ({history.n_items}); got {labels.size}."
            )
        _, clusters = np.unique(labels.astype(str), return_inverse=True)
    requested = method
    if method == "auto":
        method = "model" if calibrate and model_history_ok(history) else "stratified"
    elif method == "model":
        if not calibrate:
            raise InputError(
                "method='model' needs calibrate=True (drop --no-calibrate): its weight and its "
                "interval come from the leave-models-out calibration on the history."
            )
        if not model_history_ok(history):
            method = "stratified"
    design = build_design(scores, subset_size, method, clusters=clusters, seed=seed)
    rng = np.random.default_rng(seed)
    chosen = design.draw(rng)
    item_model = fit_items(scores) if method in ("irt", "model") else None
    calibration: dict[str, Any] = {}
    if method == "model":
        calibration = calibrate_model(
            history, subset_size, level=level, seed=seed, n_resamples=n_resamples, clusters=clusters
        )
        unpaid = model_unpaid(calibration)
        if requested == "auto" and unpaid:  # the design, whose interval holds by design
            method, item_model = "stratified", None
            calibration = {"auto": unpaid}
    if method != "model" and calibrate and np.unique(history.groups).size >= 3:
        calibration = calibration | calibrate_design(
            history,
            subset_size,
            method,
            level=level,
            seed=seed,
            n_resamples=n_resamples,
            clusters=clusters,
        )
    means = scores.mean(axis=0)
    return SubsetPlan(
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
        requested_method=requested,
    )


def model_unpaid(calibration: dict[str, Any]) -> str:
    """Why a model-based plan does not earn its place on this history (empty when it does):
    ``method="auto"`` keeps it only where, on the held-out history models, it makes smaller
    errors than the design-based estimate and its calibrated interval is wider than the
    design-based one by less than its error is smaller (a few held-out models make the
    calibrated factor conservative, which can cost more width than the item model saves)."""
    cal = calibration
    gain = cal["mae_design"] / max(cal["mae"], 1e-12)
    widening = cal["inflation"] / cal["inflation_design"]
    if gain <= 1.0:
        return (
            f"on held-out history models the item model did not lower the error (MAE "
            f"{cal['mae']:.4f}, design-based {cal['mae_design']:.4f})"
        )
    if widening > gain:
        return (
            f"on held-out history models its calibrated interval was x{widening:.2f} the "
            f"design-based one's width for errors only x{1 / gain:.2f} as large"
        )
    return ""


def model_history_ok(history: History) -> bool:
    """Whether a history is large enough for a model-based plan (see :data:`MODEL_MIN_GROUPS`,
    :data:`MODEL_MIN_ITEMS`)."""
    groups = np.unique(history.groups).size
    return bool(groups >= MODEL_MIN_GROUPS and history.n_items >= MODEL_MIN_ITEMS)


def _model_folds(
    history: History, folds: int, rng: np.random.Generator
) -> list[tuple[str, np.ndarray]]:
    """Held-out masks for a model-based plan's calibration: ``folds`` random folds of model
    groups, and one of the strongest eighth of the groups (at least 2), so that models stronger
    than all the rest are among the held-out cases."""
    groups = np.unique(history.groups)
    k = int(min(folds, groups.size))
    fold_of = dict(zip(rng.permutation(groups).tolist(), np.arange(groups.size) % k))
    fold = np.array([fold_of[g] for g in history.groups.tolist()])
    out = [(f"fold{f}", fold == f) for f in range(k)]
    means = history.scores.mean(axis=0)
    strength = {g: float(means[history.groups == g].mean()) for g in groups.tolist()}
    top = sorted(strength, key=strength.get)[-max(2, groups.size // 8) :]
    out.append(("top", np.isin(history.groups, top)))
    return out


def calibrate_model(
    history: History,
    subset_size: int,
    *,
    level: float = 0.95,
    seed: int = 0,
    n_resamples: int = 20,
    folds: int = 5,
    clusters: np.ndarray | None = None,
) -> dict[str, Any]:
    """Leave-models-out calibration of a model-based plan: for every fold of
    :func:`_model_folds`, refit the item model and rebuild the design on the other models, draw
    ``n_resamples`` subsets, and record each held-out model's design-based and model-based estimates
    against its full-benchmark score. Returns the weight on the design-based estimate with the
    least mean absolute error (over the held-out cases inside their history's range, the ones
    the combined estimate is used for), the factor that makes the combined interval cover (at
    ``level`` plus the margin, finite-sample corrected), the design-based intervals' own factor
    (for the fallback and for comparisons), and the errors beside random sampling's."""
    rng = np.random.default_rng([seed, 13])
    y_all = history.scores
    truth = y_all.mean(axis=0)
    keys = ("s", "m", "t", "q", "se", "out", "r", "id")
    rows: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    splits = _model_folds(history, folds, rng)
    for _, held in splits:
        rest = y_all[:, ~held]
        design = build_design(rest, subset_size, "stratified", clusters=clusters, seed=seed)
        model = fit_items(rest)
        means = rest.mean(axis=0)
        lo, hi = float(means.min()), float(means.max())
        yt = y_all[:, held]
        for _ in range(n_resamples):
            idx = design.draw(rng)
            s, se, df, _ = design.estimate(yt[idx], idx)
            rows["s"].append(s)
            rows["m"].append(model.expected_score(yt[idx], idx))
            rows["t"].append(truth[held])
            rows["se"].append(se)
            rows["q"].append(np.full(s.size, D.t_quantile(level, df)))
            rows["out"].append((s < lo) | (s > hi))
            ridx = rng.choice(history.n_items, subset_size, replace=False)
            rows["r"].append(np.abs(yt[ridx].mean(axis=0) - truth[held]))
            rows["id"].append(np.flatnonzero(held))
    s, m, t, q, se, out, err_random, ids = (np.concatenate(rows[k]) for k in rows)
    half = np.maximum(q * se, 1e-12)
    inside = ~out
    if not inside.any():  # every held-out case extrapolated: the design alone
        inside = np.ones_like(out)
    errors = np.abs(WEIGHTS[:, None] * s[inside] + (1.0 - WEIGHTS[:, None]) * m[inside] - t[inside])
    w = float(WEIGHTS[int(np.argmin(errors.mean(axis=1)))])
    # outside the range: a weight of its own, from enough distinct held-out models only
    w_out = 1.0
    if np.unique(ids[out]).size >= MODEL_MIN_OUTSIDE:
        e_out = np.abs(WEIGHTS[:, None] * s[out] + (1.0 - WEIGHTS[:, None]) * m[out] - t[out])
        w_out = float(WEIGHTS[int(np.argmin(e_out.mean(axis=1)))])
    est = np.where(out, w_out * s + (1.0 - w_out) * m, w * s + (1.0 - w) * m)
    target = calibration_target(level)
    held_models = int(np.unique(ids).size)  # distinct: the top fold's are in a random fold too
    corrected = min(1.0, target * (1.0 + 1.0 / max(held_models, 1)))
    ratios = np.abs(est - t)[inside] / half[inside]
    need = float(np.quantile(ratios, corrected, method="higher"))
    need_design = float(np.quantile(np.abs(s - t) / half, target, method="higher"))
    floor, floor_model = (
        inflation_floor(history, level, f) for f in (INFLATION_FLOOR, MODEL_INFLATION_FLOOR)
    )
    return {
        "coverage_raw": float(np.mean(ratios <= 1.0)),
        "inflation": float(min(max(floor_model, need), INFLATION_CAP)),
        "inflation_design": float(min(max(floor, need_design), INFLATION_CAP)),
        "inflation_cap": INFLATION_CAP,
        "inflation_floor": floor_model,
        "inflation_needed": need,
        "narrowing_min_groups": narrowing_min_groups(level),
        "history_groups": int(np.unique(history.groups).size),
        "weight": w,
        "weight_outside": w_out,
        "quantile": corrected,
        "mae": float(np.abs(est - t).mean()),
        "mae_design": float(np.abs(s - t).mean()),
        "mae_model": float(np.abs(m - t).mean()),
        "mae_random": float(err_random.mean()),
        "extrapolated": float(out.mean()),
        "held_out_models": held_models,
        "folds": len(splits),
        "n_resamples": n_resamples,
        "trials": int(ratios.size),
    }


def calibrate_design(
    history: History,
    subset_size: int,
    method: str,
    *,
    level: float = 0.95,
    seed: int = 0,
    n_resamples: int = 20,
    folds: int = 5,
    clusters: np.ndarray | None = None,
) -> dict[str, Any]:
    """Leave-models-out on the history: hold out each fold of model groups, rebuild the design
    on the rest, draw ``n_resamples`` subsets, and score the held-out models' intervals against
    their full-benchmark means. Returns the raw coverage, the inflation that makes the intervals
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
        design = build_design(rest, subset_size, method, clusters=clusters, seed=seed)
        model = fit_items(rest) if method == "irt" else None
        for _ in range(n_resamples):
            idx = design.draw(rng)
            est, se, df, _ = design.estimate(y_all[idx][:, held], idx, model)
            q = D.t_quantile(level, df)
            err = np.abs(est - truth[held])
            ratios.append(err / np.maximum(q * se, 1e-12))
            errors.append(err)
            ridx = rng.choice(history.n_items, subset_size, replace=False)
            errors_random.append(np.abs(y_all[ridx][:, held].mean(axis=0) - truth[held]))
    ratios = np.concatenate(ratios)
    # the factor at which held-out history models are covered a little above the level (the
    # collapsed-strata variance overstates, so this may narrow the intervals: never below
    # INFLATION_FLOOR of the design's own, and not at all on a history of too few model groups)
    need = float(np.quantile(ratios, calibration_target(level)))
    floor = inflation_floor(history, level)
    return {
        "coverage_raw": float(np.mean(ratios <= 1.0)),
        "inflation": float(min(max(floor, need), INFLATION_CAP)),
        "inflation_cap": INFLATION_CAP,
        "inflation_floor": floor,
        "inflation_needed": need,
        "narrowing_min_groups": narrowing_min_groups(level),
        "history_groups": int(groups.size),
        "mae": float(np.concatenate(errors).mean()),
        "mae_random": float(np.concatenate(errors_random).mean()),
        "folds": k,
        "n_resamples": n_resamples,
        "trials": int(ratios.size),
    }


__all__ = [
    "METHODS",
    "MODEL_MIN_GROUPS",
    "MODEL_MIN_ITEMS",
    "Design",
    "SubsetPlan",
    "as_plan",
    "build_design",
    "load_plan",
    "model_history_ok",
    "plan_subset",
]

#: ``Plan`` was this class's name; ``labcoat.Plan`` is the verdicts' pre-registered plan
__getattr__ = deprecated_names("labcoat.evals.plan", {"Plan": ("SubsetPlan", SubsetPlan)})
