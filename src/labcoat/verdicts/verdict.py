"""The verdict: run exactly the registered analysis and say confirmed, refuted or inconclusive.

The analysis is the plan's, through :mod:`labcoat.stats`: the paired difference with CR1
clustered standard errors (:func:`labcoat.stats.compare`, what ``labcoat stats compare``
runs), McNemar's test (:func:`labcoat.stats.mcnemar`), a paired bootstrap for F1-like metrics
(:func:`labcoat.stats.bootstrap_difference`), or an anytime-valid confidence sequence under a
sequential plan (:class:`labcoat.stats.ConfidenceSequence`). The choice of test is made when
the plan is written (:meth:`Plan.resolved_test`), never from the data.

With ``d`` the difference A − B (oriented by ``better``) and ``t`` the threshold (``+margin``
for superiority, ``-margin`` for non-inferiority):

* **confirmed**: the p-value of ``H0: d ≤ t`` (TOST ``|d| ≥ margin`` for equivalence), adjusted
  within the family (Holm or BH, the family's unrecorded members counted as p = 1), is ≤ α;
* **refuted**: the interval at the plan's level lies entirely on the wrong side of ``t``
  (outside ``±margin`` for equivalence);
* **inconclusive**: neither.

The interval is two-sided at ``1 − α`` for a two-sided plan and at ``1 − 2α`` for a one-sided
plan or an equivalence (its bound on each side is the one-sided ``1 − α`` bound).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result, check_kind
from labcoat.verdicts.deviations import (
    DataEvidence,
    Observation,
    PilotOverlap,
    PlanRevision,
    PriorVerdict,
    SealedFingerprints,
    deviations_of,
    find_deviations,
)
from labcoat.verdicts.plan import SHARE_METRICS, Plan, coerce_plan

#: exit codes of ``labcoat verdict`` (by the registered plan; a verdict the registered plan
#: would not have given exits with :data:`NOT_HELD`)
EXIT_CODES = {"confirmed": 0, "refuted": 1, "inconclusive": 4}
#: the exit code of a verdict that would not have held by the registered plan
NOT_HELD = 1
#: how much older than a plan a results file must be to show the results predate it: file
#: systems keep times coarsely (FAT: 2 s) and on their own clock
FILE_TIME_SLACK_S = 2.0


# ---- the data of one arm ----------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """The rows of one arm the plan uses, after its planned exclusions."""

    source: str
    ids: np.ndarray
    scores: np.ndarray | None
    cluster: np.ndarray | None
    seeds: np.ndarray | None
    truth: np.ndarray | None
    fingerprint: str
    produced_at: str | None
    excluded: int
    #: every digest of this data a ledger may have sealed: the fingerprint above, the whole
    #: table's, and the file's as ``labcoat run --data`` takes it
    digests: frozenset[str] = frozenset()


#: the fix for a repeated id that a verdict names: it judges the rows its plan registered, so
#: averaging them away is not its to do (``labcoat verdict`` has no --duplicates)
REPEATED_IDS_REMEDY = (
    "A verdict judges the rows its plan registered and does not average them: remove the "
    "repeated rows, or, if they are answers to one item under several seeds or epochs, give "
    "them a `seed` (or `epoch`) column and register the plan's seeds and seed_column."
)


def _table(data: Any, name: str):
    from labcoat.stats.readers import Table, read_table

    if isinstance(data, Table):
        return data, None
    if isinstance(data, Mapping):
        return Table(name, {k: np.asarray(v, dtype=object) for k, v in data.items()}), None
    if isinstance(data, (str, os.PathLike)):
        return read_table(data, remedy=REPEATED_IDS_REMEDY), Path(data)
    raise InputError(
        f"{name}: expected a results file, a labcoat.stats.Table or a dict of columns; got "
        f"{type(data).__name__}"
    )


def _produced_at(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    if not files:
        return None
    mtime = max(p.stat().st_mtime for p in files)
    return datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="microseconds")


def _digest(*columns: np.ndarray | None) -> str:
    h = hashlib.blake2b(digest_size=16)
    for col in columns:
        h.update(b"\x1e")
        if col is not None:
            h.update("\x1f".join(map(str, col.tolist())).encode())
    return f"blake2b:{h.hexdigest()}"


def _file_digests(path: Path | None) -> set[str]:
    """The file's (or folder's) fingerprint as ``labcoat run --data`` records it, sampled (the
    default) and in full (``--full-hash``)."""
    from labcoat.provenance.fingerprint import fingerprint

    if path is None or not path.exists():
        return set()
    return {fingerprint(path).digest, fingerprint(path, full=True).digest}


def _table_digest(table: Any) -> str:
    names = sorted(table.columns)
    return _digest(np.array(names, dtype=object), *(np.asarray(table.columns[n]) for n in names))


def load_arm(data: Any, plan: Plan, column: str, name: str) -> Arm:
    """One arm's rows (a results file, a :class:`labcoat.stats.Table` or a dict of columns)
    as the plan reads them, without the items the plan excludes."""
    return _load(*_table(data, name), plan, column, name)


def _load(table: Any, path: Path | None, plan: Plan, column: str, name: str) -> Arm:
    ids = table.labels(plan.id)
    bootstrap = plan.resolved_test() == "bootstrap"
    scores = None if bootstrap else table.scores(column)
    truth = table.labels(plan.label) if bootstrap else None
    predicted = table.labels(column) if bootstrap else None
    # the clusters are arm A's (as `labcoat stats compare` reads them); B may lack the column
    optional = name.endswith("b") and plan.cluster not in table.columns
    cluster = None if plan.cluster is None or optional else table.labels(plan.cluster)
    seeds = None if plan.seed_column is None else table.labels(plan.seed_column)
    keep = ~np.isin(ids, np.array(plan.exclude, dtype=object)) if plan.exclude else None
    if keep is not None:
        ids, cluster, seeds, truth, predicted = (
            None if x is None else x[keep] for x in (ids, cluster, seeds, truth, predicted)
        )
        scores = None if scores is None else scores[keep]
    if ids.size == 0:
        raise InputError(f"{table.source}: no rows left after the plan's exclusions")
    if scores is not None:
        _within_bounds(scores, plan, column, table.source)
    fingerprint = _digest(ids, predicted if bootstrap else scores, seeds, truth)
    return Arm(
        source=table.source,
        ids=ids,
        scores=predicted if bootstrap else scores,
        cluster=cluster,
        seeds=seeds,
        truth=truth,
        fingerprint=fingerprint,
        produced_at=_produced_at(path),
        excluded=0 if keep is None else int((~keep).sum()),
        digests=frozenset({fingerprint, _table_digest(table), *_file_digests(path)}),
    )


def _within_bounds(scores: np.ndarray, plan: Plan, column: str, source: str) -> None:
    """Refuse a score outside the plan's ``bounds`` (the range every per-item score lies in, [0,
    1] unless registered otherwise) where they bind: a share metric such as accuracy, McNemar's
    0/1 answers, a sequential test's range. A 3 in an accuracy column is a wrong column or
    scale, and a mean with it in would be judged as if it were an accuracy."""
    binding = plan.metric.lower() in SHARE_METRICS or plan.resolved_test() in (
        "sequential",
        "mcnemar",
    )
    if not binding:
        return
    lo, hi = plan.bounds
    outside = np.flatnonzero((scores < lo) | (scores > hi))
    if outside.size:
        i = int(outside[0])
        raise InputError(
            f"{source}: column {column!r} has {outside.size} score(s) outside the plan's bounds "
            f"[{lo:g}, {hi:g}] (e.g. {scores[i]:g}); every per-item {plan.metric} score "
            "must lie in them. Score the right column (--score), or, if the scale itself is "
            "right, the plan's bounds are not (a revision now is a deviation)."
        )


@dataclass(frozen=True)
class Pairs:
    """Per-item means of both arms on the items they share, in A's order."""

    ids: np.ndarray
    a: np.ndarray
    b: np.ndarray
    cluster: np.ndarray | None
    counts_a: np.ndarray
    counts_b: np.ndarray
    only_a: list[str]
    only_b: list[str]


def paired_means(a: Arm, b: Arm) -> Pairs:
    """The items both arms scored (answers averaged per item) and those one arm lacks."""
    from labcoat.stats._questions import per_question, question_scores, shared_ids

    qa = question_scores(a.scores, a.ids, name=a.source)
    qb = question_scores(b.scores, b.ids, name=b.source)
    match = shared_ids(qa.ids, qb.ids)
    cluster = None
    if a.cluster is not None:
        cluster = per_question(a.cluster, qa, "cluster")[match.index_a]
    return Pairs(
        qa.ids[match.index_a],
        qa.means[match.index_a],
        qb.means[match.index_b],
        cluster,
        qa.counts[match.index_a],
        qb.counts[match.index_b],
        [str(v) for v in match.only_a],
        [str(v) for v in match.only_b],
    )


def item_rows(pairs: Pairs) -> dict[str, str]:
    """Per item, a short digest of both arms' scores: what a pilot seals, so that a verdict can
    tell the pilot's own rows (the same scores) from items scored again."""
    return {
        str(i): hashlib.blake2b(f"{a!r}\x1f{b!r}".encode(), digest_size=6).hexdigest()
        for i, a, b in zip(pairs.ids.tolist(), pairs.a.tolist(), pairs.b.tolist())
    }


def without_items(table: Any, id_column: str, ids: set[str]) -> Any:
    """``table`` without the rows whose id is in ``ids``."""
    keep = np.array([str(i) not in ids for i in table.labels(id_column).tolist()], bool)
    return replace(table, columns={k: np.asarray(v)[keep] for k, v in table.columns.items()})


# ---- tests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contrast:
    """What a test says about ``d`` = A − B: the estimate, its interval, the p-value of the
    plan's null (None for a confidence sequence), the MDE and the n the test used."""

    estimate: float
    ci: ConfidenceInterval
    pvalue: float | None
    mde: float | None
    n_paired: int


def points(x: float) -> str:
    """A value with its size in points when it is a fraction: ``0.0308 (3.1 points)``."""
    return f"{x:.3g}" if abs(x) >= 1 else f"{x:.3g} ({100 * x:.1f} points)"


def level(plan: Plan, alpha: float | None = None) -> float:
    """The interval's level: ``1 − α`` two-sided, ``1 − 2α`` one-sided or equivalence."""
    alpha = plan.alpha if alpha is None else alpha
    return (
        1 - alpha
        if plan.sides == "two-sided" and plan.comparison != "equivalence"
        else 1 - 2 * alpha
    )


def threshold(plan: Plan) -> float:
    """The oriented value ``d`` must exceed: +margin (superiority), −margin (non-inferiority)."""
    return -plan.margin if plan.comparison == "non-inferiority" else plan.margin


def sign(plan: Plan) -> float:
    return 1.0 if plan.better == "higher" else -1.0


def t_pvalue(plan: Plan, diff: float, se: float, df: float | None) -> float:
    """p-value of the plan's null for a t (or z) statistic: one-sided, two-sided or TOST."""
    from labcoat.stats._distributions import two_sided_pvalue, upper_tail

    e = sign(plan) * diff

    def tail(x: float) -> float:  # P(T >= x / se)
        if se == 0:
            return 0.0 if x > 0 else 1.0
        return upper_tail(x / se, df)

    if plan.comparison == "equivalence":
        return max(tail(e + plan.margin), tail(plan.margin - e))
    t = threshold(plan)
    if plan.sides == "two-sided":
        if se == 0:
            return 0.0 if e != t else 1.0
        return two_sided_pvalue((e - t) / se, df)
    return tail(e - t)


def _paired(plan: Plan, a: Arm, b: Arm, alpha_mde: float) -> Contrast:
    from labcoat.stats.compare import compare, detectable_effect

    result = compare(a.scores, b.scores, a.cluster, level(plan), ids_a=a.ids, ids_b=b.ids)
    return Contrast(
        result.diff,
        result.ci,
        t_pvalue(plan, result.diff, result.se, result.df),
        detectable_effect(result.se, level(plan, alpha_mde), result.df, plan.power),
        result.n,
    )


def _mcnemar(plan: Plan, a: Arm, b: Arm, alpha_mde: float) -> Contrast:
    from labcoat.stats.compare import compare, detectable_effect
    from labcoat.stats.proportions import mcnemar

    pairs = paired_means(a, b)
    if (pairs.counts_a > 1).any() or (pairs.counts_b > 1).any():
        raise InputError(
            "McNemar's test needs one 0/1 answer per item in each arm; some items have several "
            'rows: plan test = "paired" for several seeds'
        )
    test = mcnemar(pairs.a, pairs.b)
    result = compare(pairs.a, pairs.b, None, level(plan))
    e = sign(plan) * result.diff
    if plan.sides == "two-sided":
        p = test.pvalue
    else:
        p = test.pvalue / 2 if e > 0 else 1 - test.pvalue / 2
    return Contrast(
        result.diff,
        result.ci,
        float(p),
        detectable_effect(result.se, level(plan, alpha_mde), result.df, plan.power),
        result.n,
    )


def _bootstrap(plan: Plan, a: Arm, b: Arm, alpha_mde: float) -> Contrast:
    from labcoat.stats._questions import shared_ids
    from labcoat.stats.bootstrap import bootstrap_difference, classification_statistics

    match = shared_ids(a.ids, b.ids)
    ia, ib = match.index_a, match.index_b
    if len(set(a.ids.tolist())) != a.ids.size or len(set(b.ids.tolist())) != b.ids.size:
        raise InputError("a bootstrap of F1-like metrics needs one row per item in each arm")
    positive = "1"
    stats_a = classification_statistics(a.truth[ia], a.scores[ia], pos_label=positive)
    stats_b = classification_statistics(b.truth[ib], b.scores[ib], pos_label=positive)
    boot = bootstrap_difference(
        stats_a,
        stats_b,
        plan.metric,
        n_resamples=plan.resamples,
        level=level(plan),
        seed=plan.seed,
    )
    values = sign(plan) * boot.bootstrap_distribution
    count = values.size + 1

    def above(x: float) -> float:  # bootstrap p of "d <= x": the share of resamples at or below
        return float(((values <= x).sum() + 1) / count)

    def below(x: float) -> float:
        return float(((values >= x).sum() + 1) / count)

    t = threshold(plan)
    if plan.comparison == "equivalence":
        p = max(above(-plan.margin), below(plan.margin))
    elif plan.sides == "two-sided":
        p = min(1.0, 2 * min(above(t), below(t)))
    else:
        p = above(t)
    from labcoat.stats._distributions import quantile

    z = quantile(1 - (1 - level(plan, alpha_mde)) / 2) + quantile(plan.power)
    return Contrast(boot.statistic, boot.ci, p, z * boot.se, int(ia.size))


def _sequential(plan: Plan, a: Arm, b: Arm, alpha: float) -> Contrast:
    from labcoat.stats.sequential import ConfidenceSequence

    pairs = paired_means(a, b)
    lo, hi = plan.bounds
    cs = ConfidenceSequence(lo - hi, hi - lo, level(plan, alpha)).update(pairs.a - pairs.b)
    return Contrast(cs.mean, cs.interval, None, None, int(pairs.ids.size))


TESTS = {"paired": _paired, "mcnemar": _mcnemar, "bootstrap": _bootstrap, "sequential": _sequential}


def family_alpha(plan: Plan, members: int = 0) -> float:
    """α per hypothesis when a p-value is not adjusted (Bonferroni over the family)."""
    size = max(plan.family_size, members)
    return plan.alpha / size if plan.correction != "none" else plan.alpha


def adjust(
    plan: Plan, p: float | None, others: Sequence[float] = (), members: int = 0
) -> float | None:
    """``p`` adjusted within the family: the other members' latest p-values, and p = 1 for
    the members not judged yet (which never makes the adjustment less strict). The family
    counts at least its ``members`` registered in the ledger, whatever size the plan declared."""
    if p is None:
        return None
    size = max(plan.family_size, members)
    if plan.correction == "none" or size == 1 and not others:
        return p
    from labcoat.stats.multiple import adjust_pvalues

    padding = [1.0] * max(0, size - 1 - len(others))
    return float(adjust_pvalues([p, *others, *padding], plan.correction, plan.alpha).adjusted[0])


def decide(plan: Plan, ci: ConfidenceInterval, p_adjusted: float | None, estimate: float) -> str:
    """confirmed / refuted / inconclusive from the adjusted p-value and the interval."""
    s, t, m = sign(plan), threshold(plan), plan.margin
    low, high = sorted((s * ci.low, s * ci.high))
    if plan.comparison == "equivalence":
        inside = -m < low and high < m if p_adjusted is None else p_adjusted <= plan.alpha
        if inside:
            return "confirmed"
        return "refuted" if low > m or high < -m else "inconclusive"
    if p_adjusted is None:
        confirmed = low > t
    else:
        confirmed = p_adjusted <= plan.alpha and s * estimate > t
    if confirmed:
        return "confirmed"
    return "refuted" if high < t else "inconclusive"


# ---- the result -------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictResult(Result):
    """A hypothesis judged by its registered plan, with every deviation the data shows."""

    KIND = "verdicts.verdict"

    engine: ClassVar[str] = "verdicts"
    view: ClassVar[str | None] = "labcoat.verdicts.view:verdict_view"
    section: ClassVar[str | None] = "labcoat.report.sections.verdicts:verdict_section"
    title: ClassVar[str] = "Verdict"

    id: int | None
    verdict: str
    estimate: float
    ci: ConfidenceInterval
    pvalue: float | None
    pvalue_adjusted: float | None
    mde: float | None
    n: dict[str, int]
    plan: Plan
    test: str
    fingerprints: dict[str, str] = field(default_factory=dict)
    checks: tuple[Finding, ...] = ()
    sources: tuple[str, str] = ("", "")
    #: the verdict the registered plan (revision 1, its column and metric) gives on these
    #: data; None when its analysis cannot run on them
    registered_verdict: str | None = None
    #: per arm, every digest of its data (what a later verdict matches to date the data)
    digests: dict[str, list[str]] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return list(self.checks)

    @property
    def deviations(self) -> list[dict[str, Any]]:
        return deviations_of(self.checks)

    @property
    def planned(self) -> bool:
        """True when the analysis went by the plan (no deviation found)."""
        return not self.deviations

    @property
    def held(self) -> bool:
        """True when the registered plan gives the same verdict on these data."""
        return self.registered_verdict == self.verdict

    @property
    def exit_code(self) -> int:
        """The verdict's code (0 confirmed, 1 refuted, 4 inconclusive) when it holds by the
        registered plan, deviations or not; :data:`NOT_HELD` (1) when it would not have."""
        return EXIT_CODES[self.verdict] if self.held else NOT_HELD

    @property
    def underpowered(self) -> bool:
        """True when the data as run could not detect the plan's margin (or stated effect) at
        the planned power: the realized MDE exceeds it."""
        target = self.plan.target
        return self.mde is not None and target is not None and self.mde > target

    @property
    def power_line(self) -> str | None:
        """The realized MDE against the margin (None when the test has no MDE or the plan no
        target)."""
        target = self.plan.target
        if self.mde is None or target is None:
            return None
        what = "margin" if self.plan.margin > 0 else "effect"
        if self.underpowered:
            return f"underpowered as run: MDE {points(self.mde)} > {what} {points(target)}"
        return f"MDE {points(self.mde)} ≤ {what} {points(target)}"

    @property
    def headline(self) -> str:
        """The first line: the verdict, and whether the analysis deviated from its plan."""
        who = f"#{self.id} " if self.id is not None else ""
        line = f"{who}{self.verdict}"
        if not self.deviations:
            return f"{line}, by the registered plan"
        kinds = ", ".join(dict.fromkeys(str(d["kind"]) for d in self.deviations))
        line = f"{line}, DEVIATING FROM ITS PLAN ({len(self.deviations)}: {kinds})"
        if self.held:
            return line
        if self.registered_verdict is None:
            return f"{line}; the registered plan's analysis does not run on these data"
        return f"{line}; {self.registered_verdict} by the registered plan"

    def summary(self) -> str:
        """One line for the entry's result."""
        p = "" if self.pvalue_adjusted is None else f", p_adj = {self.pvalue_adjusted:.3g}"
        weak = f"; {self.power_line}" if self.underpowered else ""
        return (
            f"{self.headline}: {self.plan.metric} A − B = {self.estimate:+.4g} "
            f"[{self.ci.low:+.4g}, {self.ci.high:+.4g}]{p}, n = {self.n['paired']} ({self.test})"
            f"{weak}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verdict": self.verdict,
            "registered_verdict": self.registered_verdict,
            "estimate": self.estimate,
            "ci": [self.ci.low, self.ci.high],
            "pvalue": self.pvalue,
            "pvalue_adjusted": self.pvalue_adjusted,
            "mde": self.mde,
            "underpowered": self.underpowered,
            "n": dict(self.n),
            "deviations": self.deviations,
            "plan": self.plan.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "VerdictResult":
        """The verdict again from its ``to_dict()`` (or the :meth:`record_dict` the ledger
        seals): its interval, plan and findings as objects, so it draws as a live one."""
        check_kind(cls, data)
        return cls(
            data["id"],
            data["verdict"],
            data["estimate"],
            ConfidenceInterval(*data["ci"][:2]),
            data["pvalue"],
            data["pvalue_adjusted"],
            data["mde"],
            dict(data["n"]),
            Plan.from_dict(data["plan"], source="stored verdict"),
            data.get("test", ""),
            dict(data.get("fingerprints", {})),
            tuple(Finding.from_dict(f) for f in data.get("findings", [])),
            tuple(data.get("sources", ("", ""))),
            data.get("registered_verdict"),
            {k: list(v) for k, v in data.get("digests", {}).items()},
        )

    def record_dict(self) -> dict[str, Any]:
        """What the ledger seals: :meth:`to_dict` plus the test, fingerprints and findings."""
        return {
            **self.to_dict(),
            "test": self.test,
            "fingerprints": dict(self.fingerprints),
            "digests": {k: list(v) for k, v in self.digests.items()},
            "sources": list(self.sources),
            "findings": [f.to_dict() for f in self.checks],
        }


def _observed_seeds(arm: Arm, counts: np.ndarray) -> tuple[tuple[str, ...], bool]:
    if arm.seeds is not None:
        return tuple(sorted(set(arm.seeds.tolist()))), True
    k = int(counts.max()) if counts.size else 0
    return tuple(str(i + 1) for i in range(k)), False


@dataclass(frozen=True)
class _Judged:
    """One analysis of both arms: the contrast, the adjusted p-value and the decision."""

    arm_a: Arm
    arm_b: Arm
    test: str
    contrast: Contrast
    p_adjusted: float | None
    verdict: str


def _judge(
    plan: Plan, a: Any, b: Any, family_pvalues: Sequence[float], members: int = 0
) -> _Judged:
    arm_a = _load(*a, plan, plan.column, "a")
    arm_b = _load(*b, plan, plan.column, "b")
    test = plan.resolved_test()
    if test != "bootstrap":
        shared = paired_means(arm_a, arm_b).ids.size
        if shared < 2:
            raise InputError(
                f"a and b share {shared} item(s) on {plan.id!r}; a paired verdict needs at "
                "least 2: check that both files name the same item ids"
            )
    est = TESTS[test](plan, arm_a, arm_b, family_alpha(plan, members))
    p_adj = adjust(plan, est.pvalue, family_pvalues, members)
    return _Judged(arm_a, arm_b, test, est, p_adj, decide(plan, est.ci, p_adj, est.estimate))


def _registered_verdict(
    registered: Plan,
    used: Plan,
    judged: _Judged,
    a: Any,
    b: Any,
    others: Sequence[float],
    members: int = 0,
) -> str | None:
    """The registered plan's verdict on the same data (None: its analysis does not run)."""
    if registered == used:
        return judged.verdict
    try:
        return _judge(registered, a, b, others, members).verdict
    except InputError:
        return None


def _evidence(arms: Mapping[str, Arm], sealed: Sequence[SealedFingerprints]) -> list[DataEvidence]:
    """Every record that an arm's data existed: the sealed fingerprints that match one of its
    digests, and its file's time."""
    found = []
    for name, arm in arms.items():
        for s in sealed:
            if arm.digests & s.digests:
                found.append(DataEvidence(name, s.at, s.what, s.entry))
        if arm.produced_at:
            found.append(
                DataEvidence(
                    name,
                    arm.produced_at,
                    f"{arm.source} last modified",
                    slack_s=FILE_TIME_SLACK_S,
                )
            )
    return found


def _pilot_overlap(
    registered: Plan,
    judged: _Judged,
    tables: Any,
    pilot: Mapping[str, str] | None,
    others: Sequence[float],
    members: int,
) -> PilotOverlap | None:
    """How much of the judged data is the sealed pilot's, and the registered plan's verdict on
    the items outside it when every shared item carries the pilot's own scores."""
    if pilot is None:
        return None
    rows = item_rows(paired_means(judged.arm_a, judged.arm_b))
    shared = {i for i in rows if i in pilot}
    same = sum(rows[i] == pilot[i] for i in shared)
    overlap = PilotOverlap(len(pilot), len(rows), len(shared), same, judged.verdict)
    if not shared or same < len(shared):
        return overlap
    fresh = [(without_items(t, registered.id, shared), None) for t, _ in tables]
    try:
        outside = _judge(registered, *fresh, others, members).verdict
    except InputError:
        outside = None
    return replace(overlap, verdict_outside=outside)


def analyse(
    plan: Any,
    a: Any,
    b: Any,
    *,
    entry_id: int | None = None,
    column: str | None = None,
    metric: str | None = None,
    previous: Sequence[PriorVerdict] = (),
    revisions: Sequence[PlanRevision] = (),
    family_pvalues: Sequence[float] = (),
    family_members: int = 0,
    sealed: Sequence[SealedFingerprints] = (),
    ledger_breaks: int = 0,
    pilot: Mapping[str, str] | None = None,
) -> VerdictResult:
    """Judge ``plan`` on the results of arm ``a`` and arm ``b`` (files, tables or dicts).

    ``column``/``metric``: score another column or call the metric otherwise (a deviation the
    verdict reports). ``previous``, ``revisions``, ``family_pvalues``, ``sealed`` and
    ``ledger_breaks`` are what the ledger knows: earlier verdicts on this hypothesis, the
    plan's sealed revisions (the first is the registered plan), the latest p-values of the
    other hypotheses in its family and how many it holds, every fingerprint it sealed (which
    dates the data) and the breaks ``verify`` found in it. ``pilot``: the rows of the pilot
    sealed with the plan (:func:`item_rows`), which the verdict must not rest on.
    """
    plan = coerce_plan(plan)
    used = plan.revised(
        column=column if column is not None else plan.column,
        metric=metric if metric is not None else plan.metric,
    )
    tables = _table(a, "a"), _table(b, "b")
    judged = _judge(used, *tables, family_pvalues, family_members)
    arm_a, arm_b, test, est = judged.arm_a, judged.arm_b, judged.test, judged.contrast
    if test != "bootstrap":
        pairs = paired_means(arm_a, arm_b)
        only_a, only_b = pairs.only_a, pairs.only_b
        (seeds_a, named), (seeds_b, _) = (
            _observed_seeds(arm_a, pairs.counts_a),
            _observed_seeds(arm_b, pairs.counts_b),
        )
    else:
        ids_a, ids_b = set(arm_a.ids.tolist()), set(arm_b.ids.tolist())
        only_a, only_b = sorted(ids_a - ids_b), sorted(ids_b - ids_a)
        seeds_a = seeds_b = None
        named = True
    fingerprints = {"a": arm_a.fingerprint, "b": arm_b.fingerprint}
    registered = revisions[0].plan if revisions else used
    on_pilot = _pilot_overlap(registered, judged, tables, pilot, family_pvalues, family_members)
    observation = Observation(
        plan=plan,
        column=used.column,
        metric=used.metric,
        n_a=len(set(arm_a.ids.tolist())),
        n_b=len(set(arm_b.ids.tolist())),
        n_paired=est.n_paired,
        only_a=only_a,
        only_b=only_b,
        seeds_a=seeds_a,
        seeds_b=seeds_b,
        seeds_named=named,
        fingerprints=fingerprints,
        previous=tuple(previous),
        revisions=tuple(revisions),
        family_members=family_members,
        evidence=tuple(_evidence({"a": arm_a, "b": arm_b}, sealed)),
        entry_id=entry_id,
        ledger_breaks=ledger_breaks,
        pilot=on_pilot,
    )
    return VerdictResult(
        id=entry_id,
        verdict=judged.verdict,
        estimate=float(est.estimate),
        ci=ConfidenceInterval(float(est.ci.low), float(est.ci.high)),
        pvalue=est.pvalue,
        pvalue_adjusted=judged.p_adjusted,
        mde=None if est.mde is None or not math.isfinite(est.mde) else float(est.mde),
        n={"a": observation.n_a, "b": observation.n_b, "paired": est.n_paired},
        plan=plan,
        test=test,
        fingerprints=fingerprints,
        checks=tuple(find_deviations(observation)),
        sources=(arm_a.source, arm_b.source),
        registered_verdict=_registered_verdict(
            registered, used, judged, *tables, family_pvalues, family_members
        ),
        digests={"a": sorted(arm_a.digests), "b": sorted(arm_b.digests)},
    )
