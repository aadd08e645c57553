"""Table-level decisions the ``labcoat stats`` commands make, as library functions.

Which side of a comparison is which (two files, or two columns of one), when McNemar's test
applies, how the excluded questions of ``--exclude`` are re-scored, which design effect a power
calculation uses (given, from ``icc`` and a cluster size, or estimated from pilot files), how
models of a leaderboard are named and how a baseline is aligned for a sequential replay: the
CLI parses its options and calls these, so a Python user gets the same behaviour.

Files are anything :func:`labcoat.stats.read_table` reads; a :class:`~labcoat.stats.Table` may
be passed instead of a path wherever a file is taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from labcoat._validation import BOOL, PROBABILITY, Interval, OneOf, validate_params
from labcoat.errors import InputError


def _table(source: Any, id_column: str | None = None, duplicates: str = "error"):
    from labcoat.stats.readers import Table, read_table

    if isinstance(source, Table):
        return source
    return read_table(source, id_column=id_column, duplicates=duplicates)


def model_name(path: Any, table: Any) -> str:
    """A model's label: the model the file names (Inspect, lm-eval results), else its stem."""
    if not isinstance(path, (str, Path)):
        return table.model or "model"
    return table.model or Path(str(path).rstrip("/")).stem or str(path)


@dataclass(frozen=True)
class Sides:
    """The two sides of a comparison: scores, question ids (None: matched by position),
    clusters (``cluster_b`` only when unpaired) and a label for each."""

    a: np.ndarray
    b: np.ndarray
    ids_a: np.ndarray | None
    ids_b: np.ndarray | None
    cluster_a: np.ndarray | None
    cluster_b: np.ndarray | None
    labels: tuple[str, str]


@validate_params({"unpaired": BOOL, "duplicates": OneOf(("error", "mean"))})
def read_sides(
    file_a: Any,
    file_b: Any = None,
    *,
    score: str | Sequence[str],
    on: str | None = None,
    cluster: str | None = None,
    unpaired: bool = False,
    duplicates: str = "error",
) -> Sides:
    """Both sides of a comparison: two files with one ``score`` column each, or one file with
    two score columns (``score=(A_COL, B_COL)``). A paired comparison of two files needs
    ``on``, the question id column in both; ``cluster`` is read from ``file_a`` (and from each
    file when ``unpaired``). An id on more than one row is an error, or with
    ``duplicates="mean"`` its rows are averaged (:func:`labcoat.stats.readers.check_ids`)."""
    scores = (score,) if isinstance(score, str) else tuple(score)
    ta = _table(file_a, on, duplicates)
    if file_b is None:
        if len(scores) != 2:
            raise InputError(
                "one FILE compares two of its columns: give --score twice (--score A_COL --score "
                "B_COL); "
                f"got {len(scores)}. To compare two files give FILE_A FILE_B and one --score."
            )
        if unpaired:
            raise InputError("two columns of one file score the same questions: drop --unpaired.")
        ids = None if on is None else ta.labels(on)
        return Sides(
            ta.scores(scores[0]),
            ta.scores(scores[1]),
            ids,
            ids,
            None if cluster is None else ta.labels(cluster),
            None,
            (scores[0], scores[1]),
        )
    if len(scores) != 1:
        raise InputError(
            f"--score given {len(scores)} times with two files; two files take one --score (the "
            "column "
            "in both). Two --score values compare two columns of one wide FILE."
        )
    if on is None and not unpaired:
        raise InputError(
            "a paired comparison of two files needs --on, the question id column in both."
        )
    tb = _table(file_b, on, duplicates)
    labels = (model_name(file_a, ta), model_name(file_b, tb))
    if labels[0] == labels[1]:
        labels = ("A", "B")
    return Sides(
        ta.scores(scores[0]),
        tb.scores(scores[0]),
        None if on is None else ta.labels(on),
        None if on is None else tb.labels(on),
        None if cluster is None else ta.labels(cluster),
        None if cluster is None or not unpaired else tb.labels(cluster),
        labels,
    )


def mcnemar_applies(a: Any, b: Any, ids_a: Any = None, ids_b: Any = None) -> str | None:
    """Why McNemar's test does not apply to these two sides (None: it does): it needs paired
    0/1 scores with one answer per question on both sides."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    binary = np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()
    if ids_a is None:
        single = a.size == b.size
    else:
        ids_a, ids_b = np.asarray(ids_a, dtype=object), np.asarray(ids_b, dtype=object)
        single = len(set(ids_a.tolist())) == ids_a.size and len(set(ids_b.tolist())) == ids_b.size
    if binary and single:
        return None
    return "McNemar's test needs paired 0/1 scores with one answer per question in both files."


def paired_mcnemar(a: Any, b: Any, ids_a: Any = None, ids_b: Any = None):
    """McNemar's test on the questions both sides answered (matched by id, or by position
    without ids); refused, with the reason, where :func:`mcnemar_applies` says it does not."""
    from labcoat.stats._questions import shared_ids
    from labcoat.stats.proportions import mcnemar

    why = mcnemar_applies(a, b, ids_a, ids_b)
    if why is not None:
        raise InputError(why)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if ids_a is None:
        return mcnemar(a, b)
    match = shared_ids(np.asarray(ids_a, dtype=object), np.asarray(ids_b, dtype=object))
    return mcnemar(a[match.index_a], b[match.index_b])


@dataclass(frozen=True)
class FileComparison:
    """What ``labcoat stats compare`` answers: the comparison (or, with excluded questions, the
    comparison with and without them), the two sides' labels and the extra tests asked for."""

    result: Any  # CompareResult, or ExclusionResult with ``exclude``
    labels: tuple[str, str]
    mcnemar: Any = None
    permutation: Any = None

    def to_dict(self) -> dict[str, Any]:
        out = self.result.to_dict()
        if self.mcnemar is not None:
            out["mcnemar"] = self.mcnemar.to_dict()
        if self.permutation is not None:
            out["permutation"] = self.permutation.to_dict()
        return out


@validate_params(
    {
        "unpaired": BOOL,
        "mcnemar": BOOL,
        "permutation": BOOL,
        "strict": BOOL,
        "level": PROBABILITY,
        "formula": OneOf(("cr1", "miller")),
        "duplicates": OneOf(("error", "mean")),
    }
)
def compare_files(
    file_a: Any,
    file_b: Any = None,
    *,
    score: str | Sequence[str],
    on: str | None = None,
    cluster: str | None = None,
    unpaired: bool = False,
    mcnemar: bool = False,
    permutation: bool = False,
    exclude: Any = None,
    strict: bool = False,
    formula: str = "cr1",
    seed: int = 0,
    level: float = 0.95,
    duplicates: str = "error",
) -> FileComparison:
    """Compare two models' per-question results as ``labcoat stats compare`` does.

    ``exclude``: question ids (or a JSON file of them, as ``--exclude`` takes) to leave out; the
    comparison is then re-scored with and without them (:func:`labcoat.stats.compare_excluding`)
    and needs ``on`` and a paired comparison; it re-scores the comparison only, so it does not
    combine with ``mcnemar`` or ``permutation``. ``mcnemar`` adds McNemar's test where it
    applies (:func:`mcnemar_applies`); ``permutation`` a paired sign-flip permutation test.
    """
    from labcoat.stats.compare import compare, compare_excluding

    sides = read_sides(
        file_a,
        file_b,
        score=score,
        on=on,
        cluster=cluster,
        unpaired=unpaired,
        duplicates=duplicates,
    )
    options = dict(formula=formula, strict=strict)
    if exclude is not None:
        if sides.ids_a is None or unpaired:
            raise InputError(
                "--exclude needs --on (the id column the excluded ids refer to) and a paired "
                "comparison."
            )
        if mcnemar or permutation:
            raise InputError(
                "--exclude re-scores the comparison only; run --mcnemar/--permutation without it."
            )
        if isinstance(exclude, (str, Path)):
            from labcoat.stats.readers import read_id_list

            exclude = read_id_list(exclude)
        result = compare_excluding(
            sides.a,
            sides.b,
            exclude,
            sides.cluster_a,
            level,
            ids_a=sides.ids_a,
            ids_b=sides.ids_b,
            **options,
        )
        return FileComparison(result, sides.labels)
    result = compare(
        sides.a,
        sides.b,
        sides.cluster_a,
        level,
        paired=not unpaired,
        ids_a=sides.ids_a,
        ids_b=sides.ids_b,
        cluster_b=sides.cluster_b,
        **options,
    )
    test = perm = None
    if mcnemar:
        test = paired_mcnemar(sides.a, sides.b, sides.ids_a, sides.ids_b)
    if permutation:
        from labcoat.stats.effects import paired_permutation_test

        if unpaired:
            raise InputError("--permutation is a paired test; drop --unpaired.")
        perm = paired_permutation_test(
            sides.a, sides.b, sides.cluster_a, ids_a=sides.ids_a, ids_b=sides.ids_b, seed=seed
        )
    return FileComparison(result, sides.labels, test, perm)


def read_models(files: Sequence[str]) -> tuple[list[str], list[Any]]:
    """The models of a leaderboard, one file each (``FILE`` or ``NAME=FILE``): their names
    (given, else the model the file names, else the file's stem) and tables."""
    if len(files) < 2:
        raise InputError(f"a leaderboard needs at least 2 files (one per model); got {len(files)}.")
    tables, names = [], []
    for spec in files:
        given, sep, path = spec.partition("=")
        if not sep or not path:
            given, path = "", spec
        table = _table(path)
        tables.append(table)
        names.append(given or model_name(path, table))
    if len(set(names)) < len(names):
        names = [
            given if "=" in spec else Path(spec.rstrip("/")).stem
            for spec, given in zip(files, names)
        ]
    if len(set(names)) < len(names):
        raise InputError(f"two models share a name ({', '.join(names)}); name them with NAME=FILE.")
    return names, tables


@validate_params(
    {
        "icc": Interval(float, 0.0, 1.0, none=True),
        "cluster_size": Interval(float, 1.0, none=True),
        "design_effect": Interval(float, 0.0, low_open=True, none=True),
    }
)
def choose_design_effect(
    *,
    icc: float | None = None,
    cluster_size: float | None = None,
    design_effect: float | None = None,
    pilot_a: Any = None,
    pilot_b: Any = None,
    on: str | None = None,
    score: str | None = None,
    cluster: str | None = None,
) -> float:
    """The variance inflation a power calculation uses, from one of three sources: ``icc``
    with ``cluster_size`` (``1 + (size - 1) * icc``), a known ``design_effect``, or estimated
    from pilot files (``cluster``: the cluster column of ``pilot_a``, with ``on`` and
    ``score``; the design effect at the pilot's own cluster sizes, which
    :func:`pilot_clusters` projects to another n). None of them: 1 (no clustering)."""
    from labcoat.stats import power as pw

    ways = [icc is not None or cluster_size is not None, design_effect is not None, bool(cluster)]
    if sum(ways) > 1:
        raise InputError(
            "give one of --icc with --cluster-size, --design-effect, or --cluster with pilot files."
        )
    if ways[0]:
        if icc is None or cluster_size is None:
            raise InputError(
                "--icc and --cluster-size go together: the design effect is 1 + (size - 1) * icc."
            )
        return pw.design_effect(icc, cluster_size)
    if design_effect is not None:
        return float(design_effect)
    if cluster is not None:
        return pilot_clusters(pilot_a, pilot_b, on=on, score=score, cluster=cluster).design_effect
    return 1.0


def pilot_clusters(pilot_a: Any, pilot_b: Any, *, on: str | None, score: str | None, cluster: str):
    """The ICC of the paired differences in two pilot files' clusters (``cluster``: a column of
    ``pilot_a``), with its upper bound: :func:`labcoat.stats.estimate_design_effect`."""
    from labcoat.stats import power as pw
    from labcoat.stats._questions import match_ids

    if pilot_a is None or pilot_b is None or on is None or score is None:
        raise InputError(
            "--cluster estimates the design effect from pilot files: give --pilot-a, "
            "--pilot-b, --on and --score."
        )
    ta, tb = _table(pilot_a, on), _table(pilot_b, on)
    ids_a = ta.labels(on)
    d = ta.scores(score) - tb.scores(score)[match_ids(ids_a, tb.labels(on))]
    return pw.estimate_design_effect(d, ta.labels(cluster))


#: per metric, the columns of a results file its per-item sufficient statistics come from
METRIC_INPUTS: dict[str, tuple[str, ...]] = {
    "mean": ("score",),
    "f1": ("true", "pred"),
    "precision": ("true", "pred"),
    "recall": ("true", "pred"),
    "mcc": ("true", "pred"),
    "perplexity": ("nll", "tokens"),
    "bleu": ("hyp", "ref"),
}


def item_statistics(
    table: Any,
    metric: str,
    *,
    score: str | None = None,
    true: str | None = None,
    pred: str | None = None,
    pos_label: str = "1",
    nll: str | None = None,
    tokens: str | None = None,
    hyp: str | None = None,
    ref: str | None = None,
) -> np.ndarray:
    """The ``(n_items, k)`` sufficient statistics :func:`labcoat.stats.bootstrap_metric` takes
    for ``metric``, read from a results table (a path or :class:`labcoat.stats.Table`): the
    score column for ``mean``, the true and predicted labels for f1/precision/recall/mcc, the
    summed NLL and token counts for perplexity, hypothesis and reference text for bleu."""
    from labcoat.stats.bootstrap import (
        bleu_statistics,
        classification_statistics,
        perplexity_statistics,
    )
    from labcoat.stats.readers import read_table

    OneOf(sorted(METRIC_INPUTS)).check(metric, "metric")
    given = dict(score=score, true=true, pred=pred, nll=nll, tokens=tokens, hyp=hyp, ref=ref)
    missing = [name for name in METRIC_INPUTS[metric] if given[name] is None]
    if missing:
        shown = " and ".join(f"{m}= (--{m})" for m in missing)
        raise InputError(f"metric {metric}: needs the column(s) {shown}.")
    if not hasattr(table, "scores"):
        table = read_table(table)
    if metric == "mean":
        values = table.scores(score)
        return np.stack([values, np.ones_like(values)], axis=1)
    if metric in ("f1", "precision", "recall", "mcc"):
        return classification_statistics(
            table.labels(true), table.labels(pred), pos_label=str(pos_label)
        )
    if metric == "perplexity":
        return perplexity_statistics(table.scores(nll), table.scores(tokens))
    return bleu_statistics([str(h) for h in table.column(hyp)], [str(r) for r in table.column(ref)])


def solve_power(
    *,
    mde: float | None = None,
    n: float | None = None,
    effect: float | None = None,
    power: float = 0.8,
    omega2: float | None = None,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    k_a: float = 1,
    k_b: float = 1,
    alpha: float = 0.05,
    alternative: str = "two-sided",
    icc: float | None = None,
    cluster_size: float | None = None,
    design_effect: float | None = None,
    pilot_a: Any = None,
    pilot_b: Any = None,
    on: str | None = None,
    score: str | None = None,
    cluster: str | None = None,
):
    """Solve for whichever quantity is missing, as ``statsmodels``' ``solve_power`` does: the
    questions needed to detect ``mde`` (Eq 9), the MDE of ``n`` questions (Eq 10), or, with
    ``n`` and ``effect``, the power to detect ``effect``. The variances are ``omega2`` (and
    ``sigma2_a``/``sigma2_b``) or are estimated from two pilot results files (``pilot_a``,
    ``pilot_b``, with ``on``/``score``); clustering enters through one design effect
    (:func:`choose_design_effect`), except that pilot files with a ``cluster`` column give the
    ICC, projected to the n solved for in the pilot's clusters with t(G - 1) quantiles
    (:func:`labcoat.stats.clustered_power`). One call is what ``labcoat stats power`` runs."""
    from labcoat.stats.power import (
        clustered_power,
        minimum_detectable_effect,
        power_at,
        sample_size,
    )

    wanted = (
        "give mde= (--mde: solve for n), or n= (--n: solve for the MDE), or n= with effect= "
        "(--n --effect: the power)"
    )
    if mde is not None and (n is not None or effect is not None):
        raise InputError(f"{wanted}, not several.")
    if mde is None and n is None:
        raise InputError(f"{wanted}.")
    if (pilot_a is None) != (pilot_b is None):
        raise InputError("give both pilot files (--pilot-a and --pilot-b), or neither.")
    if cluster is not None and not any(x is not None for x in (icc, cluster_size, design_effect)):
        clusters = pilot_clusters(pilot_a, pilot_b, on=on, score=score, cluster=cluster)
        est = pilot_components(pilot_a, pilot_b, on=on, score=score)
        return clustered_power(
            est.omega2,
            clusters,
            mde=mde,
            n=n,
            effect=effect,
            sigma2_a=est.sigma2_a,
            sigma2_b=est.sigma2_b,
            k_a=k_a,
            k_b=k_b,
            alpha=alpha,
            power=power,
            alternative=alternative,
        )
    deff = choose_design_effect(
        icc=icc,
        cluster_size=cluster_size,
        design_effect=design_effect,
        pilot_a=pilot_a,
        pilot_b=pilot_b,
        on=on,
        score=score,
        cluster=cluster,
    )
    if pilot_a is not None:
        est = pilot_components(pilot_a, pilot_b, on=on, score=score)
        omega2, sigma2_a, sigma2_b = est.omega2, est.sigma2_a, est.sigma2_b
    elif omega2 is None:
        raise InputError(
            "give omega2= (--omega2; and optionally sigma2_a/sigma2_b), or pilot files to "
            "estimate them."
        )
    common = dict(
        sigma2_a=sigma2_a,
        sigma2_b=sigma2_b,
        k_a=k_a,
        k_b=k_b,
        alpha=alpha,
        alternative=alternative,
        design_effect=deff,
    )
    if mde is not None:
        return sample_size(mde, omega2, power=power, **common)
    if effect is not None:
        return power_at(effect, n, omega2, **common)
    return minimum_detectable_effect(n, omega2, power=power, **common)


def pilot_components(pilot_a: Any, pilot_b: Any, *, on: str | None, score: str | None):
    """ω², σ²_A and σ²_B (:func:`labcoat.stats.variance_components`) estimated from two pilot
    files with question ids in ``on`` and scores in ``score``."""
    from labcoat.stats.power import variance_components

    if on is None or score is None:
        raise InputError("pilot files need --on (question id column) and --score (score column).")
    ta, tb = _table(pilot_a, on), _table(pilot_b, on)
    return variance_components(
        ta.scores(score), tb.scores(score), ids_a=ta.labels(on), ids_b=tb.labels(on)
    )


def align_baseline(
    scores: Any,
    ids: Any,
    baseline: Any,
    baseline_ids: Any,
    *,
    strict: bool = False,
    names: tuple[str, str] = ("the scores", "the baseline"),
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``scores`` and ``baseline`` on the questions both answered, in the order of ``scores``,
    with a note when some were left out (``strict``: refuse instead, naming the two sources
    as ``names``)."""
    from labcoat.stats._questions import shared_ids

    match = shared_ids(np.asarray(ids, dtype=object), np.asarray(baseline_ids, dtype=object))
    notes: tuple[str, ...] = ()
    if match.only_a or match.only_b:
        if strict:
            raise InputError(
                f"question ids differ between {names[0]} and {names[1]}: {match.describe()}."
            )
        notes = (
            f"{len(match.only_a)} item(s) only in A and {len(match.only_b)} only in the "
            "baseline were left out",
        )
    return (
        np.asarray(scores, dtype=float)[match.index_a],
        np.asarray(baseline, dtype=float)[match.index_b],
        notes,
    )


__all__ = [
    "FileComparison",
    "Sides",
    "align_baseline",
    "choose_design_effect",
    "compare_files",
    "mcnemar_applies",
    "model_name",
    "paired_mcnemar",
    "pilot_clusters",
    "pilot_components",
    "read_models",
    "read_sides",
]
