"""``labcoat stats``: error bars, comparisons, leaderboards, gates, power, bootstraps, seeds
and sequential evals.

Every subcommand reads per-item results (CSV, TSV, JSONL, JSON, Parquet, lm-eval-harness
``samples_*.jsonl`` files, directories or globs of them, or an Inspect log), calls one
function of :mod:`labcoat.stats`, and prints a table, or one JSON object with ``--json``.
"""

from __future__ import annotations

from typing import Any

import click
import numpy as np

from labcoat.cli.group import Group
from labcoat.cli.ids import add_duplicates_option, reading
from labcoat.cli.output import (
    html_option,
    json_option,
    ledger_target,
    level_option,
    recording_options,
    respond,
    seed_option,
)
from labcoat.errors import InputError
from labcoat.stats.tables import METRIC_INPUTS

resamples_option = click.option(
    "--resamples",
    type=click.IntRange(min=2),
    default=2000,
    show_default=True,
    help="Bootstrap resamples.",
)
formula_option = click.option(
    "--formula",
    type=click.Choice(["cr1", "miller"]),
    default="cr1",
    show_default=True,
    help="cr1: cluster-robust SE with t intervals; miller: the paper's Eq 2/4/7/8, z intervals.",
)
strict_option = click.option(
    "--strict", is_flag=True, help="Refuse files whose question ids only partly overlap."
)


class SingleValueCommand(click.Command):
    """A command in which an option that takes one value may be given only once.

    click keeps the last of ``--score a --score b`` and drops the first without a word; here
    that is a usage error naming the option (options meant to repeat are declared ``multiple``).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        single = {
            opt: param
            for param in self.params
            if isinstance(param, click.Option) and not param.multiple and not param.count
            for opt in (*param.opts, *param.secondary_opts)
        }
        seen: dict[str, str] = {}
        for arg in args:
            if arg == "--":
                break
            opt = arg.split("=", 1)[0] if arg.startswith("--") else arg
            param = single.get(opt)
            if param is None:
                continue
            if param.name in seen:
                raise click.UsageError(f"{opt} given more than once; it takes one value", ctx=ctx)
            seen[param.name] = opt
        return super().parse_args(ctx, args)


class StatsGroup(Group):
    command_class = SingleValueCommand


@click.group("stats", cls=StatsGroup)
def stats() -> None:
    """Honest error bars for evals (Miller 2024, rliable, anytime-valid sequences)."""


def _read(path: str):
    from labcoat.stats.readers import read_table

    return read_table(path, **reading())  # ids checked (--duplicates, the --on/--id column)


def _name(path: str, table: Any) -> str:
    from labcoat.stats.tables import model_name

    return model_name(path, table)


def kept(command):
    """``--html`` and ``--ledger``/``--no-ledger`` for a command whose result can be kept."""
    command = recording_options("the result")(command)
    return html_option("Also write the result as an HTML page.")(command)


def _keep(result: Any, html: str | None, ledger: str | None, no_ledger: bool, name: str) -> None:
    """Write the page and record the result, as the options say."""
    if html is not None:  # checked before the work (html_option); written after the answer
        click.get_current_context().call_on_close(
            lambda: result.to_html(html, name=name or "result")
        )
    result.record(ledger_target(ledger, no_ledger), name=name)


@stats.command("mean")
@click.argument("file")
@click.option("--score", required=True, help="Column with the per-item score.")
@click.option("--cluster", default=None, help="Column grouping related questions (clustered SE).")
@click.option(
    "--id",
    "id_col",
    default=None,
    help="Question id column; rows sharing an id are K answers to one question.",
)
@formula_option
@level_option
@json_option
@kept
def mean_cmd(
    file: str,
    score: str,
    cluster: str | None,
    id_col: str | None,
    formula: str,
    level: float,
    as_json: bool,
    html: str | None,
    ledger: str | None,
    no_ledger: bool,
) -> None:
    """Mean score with its standard error (CR1 clustered with --cluster) and interval."""
    from labcoat.stats.mean import mean

    table = _read(file)
    result = mean(
        table.scores(score),
        None if cluster is None else table.labels(cluster),
        level,
        ids=None if id_col is None else table.labels(id_col),
        formula=formula,
    )
    _keep(result, html, ledger, no_ledger, f"{_name(file, table)}.{score}")
    respond(as_json, result, lambda: _render("mean_view", result, label=score))


def _render(view: str, *args: Any, **kwargs: Any) -> Any:
    from labcoat.stats import view as render

    return getattr(render, view)(*args, **kwargs)


@stats.command("compare")
@click.argument("file_a")
@click.argument("file_b", required=False)
@click.option("--on", "on", default=None, help="Question id column present in both files.")
@click.option(
    "--score",
    multiple=True,
    required=True,
    help="Score column in both files; twice (--score A --score B): two columns of one FILE_A.",
)
@click.option(
    "--cluster",
    default=None,
    help="Cluster column (read from FILE_A; from each file with --unpaired).",
)
@click.option(
    "--unpaired", is_flag=True, help="The files score different questions: unpaired test (Eq 5-6)."
)
@click.option("--mcnemar", "with_mcnemar", is_flag=True, help="Add McNemar's test (0/1 scores).")
@click.option(
    "--permutation",
    "with_permutation",
    is_flag=True,
    help="Add a paired sign-flip permutation test.",
)
@click.option(
    "--exclude",
    default=None,
    type=click.Path(dir_okay=False),
    help="JSON list of ids (or {'ids': [...]}, {'issues': [...]}) to leave out; "
    "says whether the decision changes.",
)
@strict_option
@formula_option
@seed_option
@level_option
@json_option
@kept
def compare_cmd(
    file_a: str,
    file_b: str | None,
    on: str | None,
    score: tuple[str, ...],
    cluster: str | None,
    unpaired: bool,
    with_mcnemar: bool,
    with_permutation: bool,
    exclude: str | None,
    strict: bool,
    formula: str,
    seed: int,
    level: float,
    as_json: bool,
    html: str | None,
    ledger: str | None,
    no_ledger: bool,
) -> None:
    """Difference A − B with SE, CI, t (or z), p-value, MDE, effect size and correlation."""
    from labcoat.stats.tables import compare_files

    found = compare_files(
        file_a,
        file_b,
        score=score,
        on=on,
        cluster=cluster,
        unpaired=unpaired,
        mcnemar=with_mcnemar,
        permutation=with_permutation,
        exclude=exclude,
        strict=strict,
        formula=formula,
        seed=seed,
        level=level,
        duplicates=reading().get("duplicates", "error"),
    )
    result, labels = found.result, found.labels
    if exclude is not None:
        respond(as_json, result, lambda: _render("exclusion_view", result, labels))
        return
    _keep(result, html, ledger, no_ledger, " vs ".join(labels) if labels else "")
    respond(
        as_json,
        found,
        lambda: _render(
            "compare_view", result, labels, mcnemar=found.mcnemar, permutation=found.permutation
        ),
    )


@stats.command("leaderboard")
@click.argument("files", nargs=-1, required=True)
@click.option("--on", "on", default=None, help="Question id column present in every file.")
@click.option("--score", required=True, help="Score column present in every file.")
@click.option("--cluster", default=None, help="Cluster column (read from the first file).")
@click.option(
    "--alpha",
    type=float,
    default=None,
    help="Level of the Holm-corrected pair tests [default: 1 - level].",
)
@formula_option
@resamples_option
@seed_option
@level_option
@json_option
@kept
def leaderboard_cmd(
    files,
    on,
    score,
    cluster,
    alpha,
    formula,
    resamples,
    seed,
    level,
    as_json,
    html,
    ledger,
    no_ledger,
) -> None:
    """Rank models (FILE or NAME=FILE each) with intervals, rank intervals, Holm-corrected pairs
    and the groups that cannot be told apart."""
    from labcoat.stats.leaderboard import leaderboard
    from labcoat.stats.tables import read_models

    names, tables = read_models(files)
    result = leaderboard(
        {n: t.scores(score) for n, t in zip(names, tables)},
        None if on is None else {n: t.labels(on) for n, t in zip(names, tables)},
        None if cluster is None else {names[0]: tables[0].labels(cluster)},
        level=level,
        alpha=alpha,
        n_resamples=resamples,
        seed=seed,
        formula=formula,
    )
    _keep(result, html, ledger, no_ledger, score)
    respond(as_json, result, lambda: _render("leaderboard_view", result))


@stats.command("gate")
@click.argument("new")
@click.argument("old")
@click.option("--on", "on", required=True, help="Question id column present in both files.")
@click.option("--score", required=True, help="Score column present in both files.")
@click.option(
    "--margin",
    type=float,
    required=True,
    help="How much worse the new model may be (δ, in score units).",
)
@click.option("--cluster", default=None, help="Cluster column (read from NEW).")
@strict_option
@formula_option
@level_option
@json_option
@kept
def gate_cmd(
    new,
    old,
    on,
    score,
    margin,
    cluster,
    strict,
    formula,
    level,
    as_json,
    html,
    ledger,
    no_ledger,
) -> int:
    """Release gate: ALLOW (exit 0) when NEW is not worse than OLD by more than --margin,
    REJECT (exit 1), or INCONCLUSIVE (exit 4) with the questions that would decide."""
    from labcoat.stats.gate import gate

    tn, to = _read(new), _read(old)
    result = gate(
        tn.scores(score),
        to.scores(score),
        margin,
        None if cluster is None else tn.labels(cluster),
        level,
        ids_new=tn.labels(on),
        ids_old=to.labels(on),
        formula=formula,
        strict=strict,
    )
    _keep(result, html, ledger, no_ledger, f"{_name(new, tn)} vs {_name(old, to)}")
    respond(as_json, result, lambda: _render("gate_view", result))
    return result.exit_code


@stats.command("power")
@click.option(
    "--omega2",
    type=float,
    default=None,
    help="Variance of the per-question difference in true scores (ω²).",
)
@click.option(
    "--sigma2-a",
    type=float,
    default=0.0,
    show_default=True,
    help="Mean within-question variance of A (σ²_A).",
)
@click.option(
    "--sigma2-b",
    type=float,
    default=0.0,
    show_default=True,
    help="Mean within-question variance of B (σ²_B).",
)
@click.option(
    "--k-a", type=float, default=1, show_default=True, help="Answers drawn per question for A."
)
@click.option(
    "--k-b", type=float, default=1, show_default=True, help="Answers drawn per question for B."
)
@click.option("--mde", type=float, default=None, help="Difference to detect: solve for n (Eq 9).")
@click.option(
    "--n",
    "n",
    type=float,
    default=None,
    help="Questions available: solve for the MDE (Eq 10), or the power with --effect.",
)
@click.option(
    "--effect", type=float, default=None, help="With --n: the power to detect this difference."
)
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Significance level.")
@click.option(
    "--power",
    "power",
    type=float,
    default=0.8,
    show_default=True,
    help="Probability of detecting the MDE.",
)
@click.option(
    "--one-sided",
    is_flag=True,
    help="One-sided test (the direction of the effect is known in advance).",
)
@click.option(
    "--icc",
    type=float,
    default=None,
    help="Intra-cluster correlation (with --cluster-size): design effect.",
)
@click.option(
    "--cluster-size", type=float, default=None, help="Questions per cluster (with --icc)."
)
@click.option(
    "--design-effect",
    type=float,
    default=None,
    help="Variance inflation from clustering, if known.",
)
@click.option("--pilot-a", default=None, help="Pilot results of A to estimate ω², σ²_A.")
@click.option("--pilot-b", default=None, help="Pilot results of B to estimate ω², σ²_B.")
@click.option("--on", "on", default=None, help="Question id column of the pilot files.")
@click.option("--score", default=None, help="Score column of the pilot files.")
@click.option(
    "--cluster",
    default=None,
    help="Cluster column of pilot A: its ICC, projected to the n solved for (t(G-1)).",
)
@json_option
def power_cmd(
    omega2,
    sigma2_a,
    sigma2_b,
    k_a,
    k_b,
    mde,
    n,
    effect,
    alpha,
    power,
    one_sided,
    icc,
    cluster_size,
    design_effect,
    pilot_a,
    pilot_b,
    on,
    score,
    cluster,
    as_json,
) -> None:
    """Questions needed for an MDE (--mde), the MDE of n questions (--n), or the power of n
    questions at a given effect (--n --effect); with clusters through a design effect."""
    from labcoat.stats.tables import solve_power

    result = solve_power(
        mde=mde,
        n=n,
        effect=effect,
        power=power,
        omega2=omega2,
        sigma2_a=sigma2_a,
        sigma2_b=sigma2_b,
        k_a=k_a,
        k_b=k_b,
        alpha=alpha,
        alternative="one-sided" if one_sided else "two-sided",
        icc=icc,
        cluster_size=cluster_size,
        design_effect=design_effect,
        pilot_a=pilot_a,
        pilot_b=pilot_b,
        on=on,
        score=score,
        cluster=cluster,
    )
    respond(as_json, result, lambda: _render("power_view", result))


@stats.command("adjust")
@click.argument("pvalues", nargs=-1, type=float)
@click.option(
    "--file", "file", default=None, help="Table with a column of p-values (instead of PVALUES)."
)
@click.option("--column", default=None, help="The p-value column of --file.")
@click.option("--label", default=None, help="Column of --file naming each test.")
@click.option(
    "--method",
    type=click.Choice(["holm", "bh"]),
    default="holm",
    show_default=True,
    help="holm: family-wise error (any dependence); bh: false discovery rate.",
)
@click.option(
    "--alpha", type=float, default=0.05, show_default=True, help="Level at which to reject."
)
@json_option
def adjust_cmd(pvalues, file, column, label, method, alpha, as_json) -> None:
    """Holm or Benjamini-Hochberg adjusted p-values for many comparisons at once."""
    from labcoat.stats.multiple import adjust_pvalues

    labels = None
    if file is not None:
        if pvalues or column is None:
            raise InputError("give either PVALUES or --file with --column, not both.")
        table = _read(file)
        values = table.scores(column)
        labels = None if label is None else table.labels(label).tolist()
    elif pvalues:
        values = np.asarray(pvalues, dtype=float)
    else:
        raise InputError("give p-values as arguments, or --file with --column.")
    result = adjust_pvalues(values, method, alpha)
    out = result.to_dict() | ({"labels": labels} if labels else {})
    respond(as_json, out, lambda: _render("adjust_view", result, labels))


#: metric -> the options whose columns build its per-item sufficient statistics


@stats.command("bootstrap")
@click.argument("file")
@click.option(
    "--metric",
    type=click.Choice(sorted(METRIC_INPUTS)),
    required=True,
    help="Corpus-level metric.",
)
@click.option("--score", default=None, help="Score column (metric mean).")
@click.option(
    "--true", "true_col", default=None, help="Gold label column (f1, precision, recall, mcc)."
)
@click.option("--pred", default=None, help="Predicted label column (f1, precision, recall, mcc).")
@click.option("--pos-label", default="1", show_default=True, help="Label of the positive class.")
@click.option(
    "--nll", default=None, help="Summed negative log-likelihood per item, in nats (perplexity)."
)
@click.option("--tokens", default=None, help="Token count per item (perplexity).")
@click.option("--hyp", default=None, help="Hypothesis text column, whitespace-tokenised (bleu).")
@click.option("--ref", default=None, help="Reference text column (bleu).")
@resamples_option
@seed_option
@level_option
@json_option
def bootstrap_cmd(
    file: str,
    metric: str,
    score,
    true_col,
    pred,
    pos_label,
    nll,
    tokens,
    hyp,
    ref,
    resamples,
    seed,
    level,
    as_json,
) -> None:
    """Bootstrap SE and CI of a corpus metric by resampling per-item sufficient statistics."""
    from labcoat.stats.bootstrap import bootstrap_metric
    from labcoat.stats.tables import item_statistics

    data = item_statistics(
        _read(file),
        metric,
        score=score,
        true=true_col,
        pred=pred,
        pos_label=pos_label,
        nll=nll,
        tokens=tokens,
        hyp=hyp,
        ref=ref,
    )
    result = bootstrap_metric(data, metric, n_resamples=resamples, level=level, seed=seed)
    respond(as_json, result, lambda: _render("bootstrap_view", result))


@stats.command("seeds")
@click.argument("file")
@click.option(
    "--score", required=True, help="Score column (normalised so that --gamma is the target)."
)
@click.option("--task", default=None, help="Task column (omit for a single task).")
@click.option(
    "--method", "method_col", default=None, help="Column naming the method/algorithm of each run."
)
@click.option(
    "--gamma",
    type=float,
    default=1.0,
    show_default=True,
    help="Target score of the optimality gap.",
)
@resamples_option
@seed_option
@level_option
@json_option
def seeds_cmd(file, score, task, method_col, gamma, resamples, seed, level, as_json) -> None:
    """IQM, mean, median, optimality gap (stratified bootstrap CIs) and P(X > Y) across runs."""
    from labcoat.stats.seeds import summarize_runs

    table = _read(file)
    try:
        result = summarize_runs(
            table.scores(score),
            None if task is None else table.labels(task),
            None if method_col is None else table.labels(method_col),
            gamma=gamma,
            n_resamples=resamples,
            level=level,
            seed=seed,
        )
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    respond(as_json, result, lambda: _render("seeds_view", result))


@stats.command("sequential")
@click.argument("file")
@click.option("--score", required=True, help="Score column, streamed in file order.")
@click.option(
    "--lower", type=float, default=0.0, show_default=True, help="Smallest possible score."
)
@click.option("--upper", type=float, default=1.0, show_default=True, help="Largest possible score.")
@click.option(
    "--width", type=float, default=None, help="Stop once the interval is narrower than this."
)
@click.option(
    "--threshold", type=float, default=None, help="Stop once the interval excludes this value."
)
@click.option("--baseline", default=None, help="Second model's file: stream A − B on matched ids.")
@click.option("--on", "on", default=None, help="Question id column (with --baseline).")
@click.option(
    "--batch", type=int, default=1, show_default=True, help="Items scored between checks."
)
@strict_option
@level_option
@json_option
def sequential_cmd(
    file, score, lower, upper, width, threshold, baseline, on, batch, strict, level, as_json
) -> None:
    """Replay an eval item by item and report when an anytime-valid interval lets it stop."""
    from dataclasses import replace

    from labcoat.stats.sequential import replay

    table = _read(file)
    values, other, notes = table.scores(score), None, ()
    if baseline is not None:
        if on is None:
            raise InputError("--baseline needs --on, the question id column shared by both files.")
        from labcoat.stats.tables import align_baseline

        base = _read(baseline)
        values, other, notes = align_baseline(
            values,
            table.labels(on),
            base.scores(score),
            base.labels(on),
            strict=strict,
            names=(file, baseline),
        )
    result = replay(
        values,
        baseline=other,
        lower=lower,
        upper=upper,
        width=width,
        threshold=threshold,
        batch=batch,
        level=level,
    )
    result = replace(result, notes=result.notes + notes)
    respond(as_json, result, lambda: _render("sequential_view", result))


@stats.command("intervals")
@click.argument("file", required=False)
@click.option("--score", default=None, help="Column of 0/1 scores.")
@click.option("--successes", type=int, default=None, help="Number correct (instead of FILE).")
@click.option("--n", "n", type=int, default=None, help="Number of questions (instead of FILE).")
@level_option
@json_option
def intervals_cmd(file, score, successes, n, level, as_json) -> None:
    """Wilson, Clopper-Pearson, Jeffreys and CLT intervals for a share of correct answers."""
    from labcoat.stats.proportions import proportion, proportion_from_scores

    if file is not None:
        if score is None:
            raise InputError("with FILE, give --score (the 0/1 score column).")
        result = proportion_from_scores(_read(file).scores(score), level)
    elif successes is not None and n is not None:
        result = proportion(successes, n, level)
    else:
        raise InputError("give FILE with --score, or --successes and --n.")
    respond(as_json, result, lambda: _render("intervals_view", result))


add_duplicates_option(stats)  # --duplicates error|mean on every stats command
