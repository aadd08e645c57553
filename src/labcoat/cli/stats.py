"""``labcoat stats``: error bars, comparisons, power, bootstraps, seeds and sequential evals.

Every subcommand reads per-item results (CSV, TSV, JSONL, JSON, Parquet, lm-eval-harness
``samples_*.jsonl`` or an Inspect log), prints a table in Miller's reporting format, or one
JSON object with ``--json``.
"""

from __future__ import annotations

from typing import Any

import click
import numpy as np

from labcoat.cli.group import Group
from labcoat.cli.output import console, emit_json, json_option
from labcoat.errors import InputError

confidence_option = click.option(
    "--confidence", type=float, default=0.95, show_default=True, help="Confidence level of the interval."
)
resamples_option = click.option("--resamples", type=click.IntRange(min=2), default=2000, show_default=True, help="Bootstrap resamples.")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed of the bootstrap.")


@click.group("stats", cls=Group)
def stats() -> None:
    """Honest error bars for evals (Miller 2024, rliable, anytime-valid sequences)."""


def _show(renderable: Any) -> None:
    console().print(renderable)


@stats.command("mean")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--score", required=True, help="Column with the per-item score.")
@click.option("--cluster", default=None, help="Column grouping related questions (clustered SE, Eq 4).")
@click.option("--id", "id_col", default=None, help="Question id column; rows sharing an id are K answers to one question.")
@confidence_option
@json_option
def mean_cmd(file: str, score: str, cluster: str | None, id_col: str | None, confidence: float, as_json: bool) -> None:
    """Mean score with its standard error (CLT, or clustered with --cluster)."""
    from labcoat.stats import mean
    from labcoat.stats.readers import read_table

    table = read_table(file)
    result = mean(
        table.scores(score),
        None if cluster is None else table.labels(cluster),
        confidence,
        ids=None if id_col is None else table.labels(id_col),
    )
    if as_json:
        emit_json(result.to_dict())
        return
    from labcoat.stats.render import mean_view

    _show(mean_view(result, label=score))


@stats.command("compare")
@click.argument("file_a", type=click.Path(dir_okay=False))
@click.argument("file_b", type=click.Path(dir_okay=False))
@click.option("--on", "on", required=True, help="Question id column present in both files.")
@click.option("--score", required=True, help="Score column present in both files.")
@click.option("--cluster", default=None, help="Cluster column (read from FILE_A; from each file with --unpaired).")
@click.option("--unpaired", is_flag=True, help="The files score different questions: unpaired test (Eq 5-6).")
@click.option("--mcnemar", "with_mcnemar", is_flag=True, help="Add McNemar's test (0/1 scores) to the JSON output.")
@confidence_option
@json_option
def compare_cmd(
    file_a: str,
    file_b: str,
    on: str,
    score: str,
    cluster: str | None,
    unpaired: bool,
    with_mcnemar: bool,
    confidence: float,
    as_json: bool,
) -> None:
    """Difference A − B with SE, CI, z, p-value and score correlation (paired, Eq 7/8)."""
    from labcoat.stats import compare
    from labcoat.stats.readers import read_table

    ta, tb = read_table(file_a), read_table(file_b)
    a, b = ta.scores(score), tb.scores(score)
    ids_a, ids_b = ta.labels(on), tb.labels(on)
    result = compare(
        a,
        b,
        None if cluster is None else ta.labels(cluster),
        confidence,
        paired=not unpaired,
        ids_a=ids_a,
        ids_b=ids_b,
        cluster_b=None if cluster is None or not unpaired else tb.labels(cluster),
    )
    test = _mcnemar_if_binary(a, b, ids_a, ids_b) if not unpaired else None
    if with_mcnemar and test is None:
        raise InputError("--mcnemar needs paired 0/1 scores with one answer per question in both files.")
    if as_json:
        out = result.to_dict()
        if with_mcnemar:
            out["mcnemar"] = test.to_dict()
        emit_json(out)
        return
    from labcoat.stats.render import compare_view

    _show(compare_view(result, mcnemar=test))


def _mcnemar_if_binary(a: np.ndarray, b: np.ndarray, ids_a: np.ndarray, ids_b: np.ndarray):
    from labcoat.stats import mcnemar
    from labcoat.stats._questions import match_ids

    binary = np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()
    single = len(set(ids_a.tolist())) == ids_a.size and len(set(ids_b.tolist())) == ids_b.size
    if not (binary and single):
        return None
    return mcnemar(a, b[match_ids(ids_a, ids_b)])


@stats.command("power")
@click.option("--omega2", type=float, default=None, help="Variance of the per-question difference in true scores (ω²).")
@click.option("--sigma2-a", type=float, default=0.0, show_default=True, help="Mean within-question variance of A (σ²_A).")
@click.option("--sigma2-b", type=float, default=0.0, show_default=True, help="Mean within-question variance of B (σ²_B).")
@click.option("--k-a", type=float, default=1, show_default=True, help="Answers drawn per question for A.")
@click.option("--k-b", type=float, default=1, show_default=True, help="Answers drawn per question for B.")
@click.option("--mde", type=float, default=None, help="Difference to detect: solve for n (Eq 9).")
@click.option("--n", "n", type=float, default=None, help="Questions available: solve for the MDE (Eq 10).")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided significance level.")
@click.option("--power", "power", type=float, default=0.8, show_default=True, help="Probability of detecting the MDE.")
@click.option("--pilot-a", default=None, type=click.Path(dir_okay=False), help="Pilot results of A to estimate ω², σ²_A.")
@click.option("--pilot-b", default=None, type=click.Path(dir_okay=False), help="Pilot results of B to estimate ω², σ²_B.")
@click.option("--on", "on", default=None, help="Question id column of the pilot files.")
@click.option("--score", default=None, help="Score column of the pilot files.")
@json_option
def power_cmd(
    omega2: float | None,
    sigma2_a: float,
    sigma2_b: float,
    k_a: float,
    k_b: float,
    mde: float | None,
    n: float | None,
    alpha: float,
    power: float,
    pilot_a: str | None,
    pilot_b: str | None,
    on: str | None,
    score: str | None,
    as_json: bool,
) -> None:
    """Questions needed for an MDE (--mde), or the MDE of n questions (--n)."""
    from labcoat.stats import minimum_detectable_effect, sample_size

    if (mde is None) == (n is None):
        raise InputError("give exactly one of --mde (solve for n) or --n (solve for the MDE).")
    if (pilot_a is None) != (pilot_b is None):
        raise InputError("give both --pilot-a and --pilot-b, or neither.")
    if pilot_a is not None:
        omega2, sigma2_a, sigma2_b = _pilot_components(pilot_a, pilot_b, on, score)
    elif omega2 is None:
        raise InputError("give --omega2 (and optionally --sigma2-a/--sigma2-b), or pilot files to estimate them.")
    kwargs = dict(sigma2_a=sigma2_a, sigma2_b=sigma2_b, k_a=k_a, k_b=k_b, alpha=alpha, power=power)
    if mde is not None:
        result, solved = sample_size(mde, omega2, **kwargs), "n"
    else:
        result, solved = minimum_detectable_effect(n, omega2, **kwargs), "mde"
    if as_json:
        emit_json({solved: getattr(result, solved)})
        return
    from labcoat.stats.render import power_view

    _show(power_view(result, solved))


def _pilot_components(pilot_a: str, pilot_b: str, on: str | None, score: str | None) -> tuple[float, float, float]:
    from labcoat.stats import variance_components
    from labcoat.stats.readers import read_table

    if on is None or score is None:
        raise InputError("pilot files need --on (question id column) and --score (score column).")
    ta, tb = read_table(pilot_a), read_table(pilot_b)
    est = variance_components(ta.scores(score), tb.scores(score), ids_a=ta.labels(on), ids_b=tb.labels(on))
    return est.omega2, est.sigma2_a, est.sigma2_b


#: metric -> the options whose columns build its per-item sufficient statistics
_METRIC_INPUTS = {
    "mean": ("score",),
    "f1": ("true", "pred"),
    "precision": ("true", "pred"),
    "recall": ("true", "pred"),
    "mcc": ("true", "pred"),
    "perplexity": ("nll", "tokens"),
    "bleu": ("hyp", "ref"),
}


@stats.command("bootstrap")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--metric", type=click.Choice(sorted(_METRIC_INPUTS)), required=True, help="Corpus-level metric.")
@click.option("--score", default=None, help="Score column (metric mean).")
@click.option("--true", "true_col", default=None, help="Gold label column (f1, precision, recall, mcc).")
@click.option("--pred", default=None, help="Predicted label column (f1, precision, recall, mcc).")
@click.option("--pos-label", default="1", show_default=True, help="Label of the positive class.")
@click.option("--nll", default=None, help="Summed negative log-likelihood per item, in nats (perplexity).")
@click.option("--tokens", default=None, help="Token count per item (perplexity).")
@click.option("--hyp", default=None, help="Hypothesis text column, whitespace-tokenised (bleu).")
@click.option("--ref", default=None, help="Reference text column (bleu).")
@resamples_option
@seed_option
@confidence_option
@json_option
def bootstrap_cmd(file: str, metric: str, score, true_col, pred, pos_label, nll, tokens, hyp, ref, resamples, seed, confidence, as_json) -> None:
    """Bootstrap SE and CI of a corpus metric by resampling per-item sufficient statistics."""
    from labcoat.stats.bootstrap import (
        bleu_statistics,
        bootstrap_metric,
        classification_statistics,
        perplexity_statistics,
    )
    from labcoat.stats.readers import read_table

    given = {"score": score, "true": true_col, "pred": pred, "nll": nll, "tokens": tokens, "hyp": hyp, "ref": ref}
    missing = [f"--{name}" for name in _METRIC_INPUTS[metric] if given[name] is None]
    if missing:
        raise InputError(f"--metric {metric} needs {' and '.join(missing)}.")
    table = read_table(file)
    if metric == "mean":
        values = table.scores(score)
        data = np.stack([values, np.ones_like(values)], axis=1)
    elif metric in ("f1", "precision", "recall", "mcc"):
        data = classification_statistics(table.labels(true_col), table.labels(pred), pos_label=str(pos_label))
    elif metric == "perplexity":
        data = perplexity_statistics(table.scores(nll), table.scores(tokens))
    else:
        data = bleu_statistics([str(h) for h in table.column(hyp)], [str(r) for r in table.column(ref)])
    result = bootstrap_metric(data, metric, n_resamples=resamples, confidence=confidence, random_state=seed)
    if as_json:
        emit_json(result.to_dict())
        return
    from labcoat.stats.render import bootstrap_view

    _show(bootstrap_view(result))


@stats.command("seeds")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--score", required=True, help="Score column (normalised so that --gamma is the target).")
@click.option("--task", default=None, help="Task column (omit for a single task).")
@click.option("--method", "method_col", default=None, help="Column naming the method/algorithm of each run.")
@click.option("--gamma", type=float, default=1.0, show_default=True, help="Target score of the optimality gap.")
@resamples_option
@seed_option
@confidence_option
@json_option
def seeds_cmd(file, score, task, method_col, gamma, resamples, seed, confidence, as_json) -> None:
    """IQM, mean, median, optimality gap (stratified bootstrap CIs) and P(X > Y) across runs."""
    from labcoat.stats.readers import read_table
    from labcoat.stats.seeds import aggregate, probability_of_improvement

    table = read_table(file)
    values = table.scores(score)
    tasks = table.labels(task) if task else np.full(values.size, "all", dtype=object)
    methods = table.labels(method_col) if method_col else np.full(values.size, "runs", dtype=object)
    grids = {m: _runs_by_task(values[methods == m], tasks[methods == m], m) for m in dict.fromkeys(methods.tolist())}
    task_sets = {m: tuple(g[1]) for m, g in grids.items()}
    if len(set(task_sets.values())) > 1:
        raise InputError(f"{file}: methods cover different tasks; every method needs runs on every task.")
    summaries = {
        m: aggregate(g[0], gamma=gamma, n_resamples=resamples, confidence=confidence, random_state=seed)
        for m, g in grids.items()
    }
    names = list(grids)
    improvements = {
        (names[0], other): probability_of_improvement(
            grids[names[0]][0], grids[other][0], n_resamples=resamples, confidence=confidence, random_state=seed
        )
        for other in names[1:]
    }
    if as_json:
        emit_json(
            {
                "methods": {m: s.to_dict() for m, s in summaries.items()},
                "probability_of_improvement": [
                    {"x": x, "y": y, "estimate": r.statistic, "ci": list(r.ci)} for (x, y), r in improvements.items()
                ],
                "confidence": confidence,
                "n_resamples": resamples,
            }
        )
        return
    from labcoat.stats.render import seeds_view

    _show(seeds_view(summaries, improvements))


def _runs_by_task(values: np.ndarray, tasks: np.ndarray, method: str) -> tuple[np.ndarray, list[str]]:
    """Long rows to a ``(runs, tasks)`` grid; every task must have the same number of runs."""
    names = list(dict.fromkeys(tasks.tolist()))
    columns = [values[tasks == t] for t in names]
    sizes = {t: c.size for t, c in zip(names, columns)}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{t}: {s}" for t, s in list(sizes.items())[:6])
        raise InputError(f"method {method!r} has unequal runs per task ({shown}); each task needs the same seeds.")
    return np.stack(columns, axis=1), names


@stats.command("sequential")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--score", required=True, help="Score column, streamed in file order.")
@click.option("--lower", type=float, default=0.0, show_default=True, help="Smallest possible score.")
@click.option("--upper", type=float, default=1.0, show_default=True, help="Largest possible score.")
@click.option("--width", type=float, default=None, help="Stop once the interval is narrower than this.")
@click.option("--threshold", type=float, default=None, help="Stop once the interval excludes this value.")
@click.option("--baseline", default=None, type=click.Path(dir_okay=False), help="Second model's file: stream A − B on matched ids.")
@click.option("--on", "on", default=None, help="Question id column (with --baseline).")
@click.option("--batch", type=int, default=1, show_default=True, help="Items scored between checks.")
@confidence_option
@json_option
def sequential_cmd(file, score, lower, upper, width, threshold, baseline, on, batch, confidence, as_json) -> None:
    """Replay an eval item by item and report when an anytime-valid interval lets it stop."""
    from labcoat.stats import ConfidenceSequence
    from labcoat.stats._questions import match_ids
    from labcoat.stats.readers import read_table

    if width is None and threshold is None:
        raise InputError("give --width, --threshold or both: the condition that lets the eval stop.")
    if batch < 1:
        raise InputError(f"--batch must be at least 1; got {batch}.")
    table = read_table(file)
    values = table.scores(score)
    if baseline is not None:
        if on is None:
            raise InputError("--baseline needs --on, the question id column shared by both files.")
        other = read_table(baseline)
        values = values - other.scores(score)[match_ids(table.labels(on), other.labels(on))]
        lower, upper = lower - upper, upper - lower
    cs = ConfidenceSequence(lower, upper, confidence)
    stopped = False
    for start in range(0, values.size, batch):
        if cs.update(values[start : start + batch]).done(width=width, threshold=threshold):
            stopped = True
            break
    ci = cs.interval
    if stopped and threshold is not None and ci.excludes(threshold):
        reason = f"interval excludes {threshold:g} after {cs.n} of {values.size} items"
    elif stopped:
        reason = f"interval narrower than {width:g} after {cs.n} of {values.size} items"
    else:
        reason = f"not decided after all {values.size} items"
    if as_json:
        emit_json(
            {
                "mean": cs.mean,
                "ci": [ci.low, ci.high],
                "n_used": cs.n,
                "n_total": int(values.size),
                "stopped": stopped,
                "reason": reason,
                "confidence": confidence,
            }
        )
        return
    from labcoat.stats.render import sequential_view

    _show(sequential_view(cs, int(values.size), stopped, reason))


@stats.command("intervals")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--score", default=None, help="Column of 0/1 scores.")
@click.option("--successes", type=int, default=None, help="Number correct (instead of FILE).")
@click.option("--n", "n", type=int, default=None, help="Number of questions (instead of FILE).")
@confidence_option
@json_option
def intervals_cmd(file, score, successes, n, confidence, as_json) -> None:
    """Wilson, Clopper-Pearson, Jeffreys and CLT intervals for a share of correct answers."""
    from labcoat.stats import proportion, proportion_from_scores
    from labcoat.stats.readers import read_table

    if file is not None:
        if score is None:
            raise InputError("with FILE, give --score (the 0/1 score column).")
        result = proportion_from_scores(read_table(file).scores(score), confidence)
    elif successes is not None and n is not None:
        result = proportion(successes, n, confidence)
    else:
        raise InputError("give FILE with --score, or --successes and --n.")
    if as_json:
        emit_json(result.to_dict())
        return
    from labcoat.stats.render import intervals_view

    _show(intervals_view(result))
