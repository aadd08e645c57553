"""``labcoat audit``: label errors, duplicates across splits, benchmark contamination and group
leakage. Exit status: 0 nothing failed (warnings allowed), 1 a check failed, 2 bad input."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from labcoat.cli.group import Group
from labcoat.cli.output import (
    json_option,
    ledger_target,
    recording_options,
    renamed_option,
    respond,
    seed_options,
    titled,
)
from labcoat.errors import InputError

recorded = recording_options()


def _engine_needs(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--engine ray`` needs Ray: checked before any file is read."""
    if value == "ray":
        from labcoat.extras import require

        require("ray", "--engine ray")
    return value


engine_option = click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Run the pipeline's tasks on this machine or on Ray.",
    callback=_engine_needs,
)
jobs_option = renamed_option(
    "--jobs",
    "--workers",
    "n_jobs",
    short="-j",
    default=None,
    type=int,
    help="Parallel tasks; -1 or none: every core.",
)
address_option = click.option(
    "--address", default=None, help="Ray cluster address (default: a local Ray)."
)


@click.group("audit", cls=Group)
def audit() -> None:
    """Audit data: label errors, duplicates across splits, contamination, group leakage."""


def _finish(result: Any, as_json: bool, title: str) -> None:
    """Print the result (one JSON object with --json, else rich) and exit 1 if a check failed."""
    # every row index the user asked for, not the first thousand
    render = lambda: titled(f"labcoat audit · {title}", result)  # noqa: E731
    respond(as_json, result, render, max_items=sys.maxsize)
    raise click.exceptions.Exit(0 if result.ok else 1)


@audit.command("labels")
@click.argument("setup", required=False, metavar="[SETUP.py[:NAME]]")
@click.option(
    "--pred-probs",
    type=click.Path(dir_okay=False),
    default=None,
    help="Out-of-sample probabilities, (N, K) .npy or .pt.",
)
@click.option(
    "--labels",
    "labels_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Given labels: .npy/.pt, or a table with --label-column.",
)
@click.option(
    "--label-column",
    default=None,
    help="Column of --labels holding the label (CSV, JSONL, Parquet).",
)
@click.option(
    "--id-column",
    default=None,
    help='Column of --labels naming each row; flagged ids go to the JSON as "ids".',
)
@click.option(
    "--folds",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="Copies trained for out-of-fold probabilities (with SETUP).",
)
@seed_options(help="Seed of the folds and the copies.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@json_option
@recorded
def labels_cmd(
    setup,
    pred_probs,
    labels_file,
    label_column,
    id_column,
    folds,
    seed,
    quiet,
    as_json,
    ledger,
    no_ledger,
) -> None:
    """Rows whose label is likely wrong (cleanlab's confident learning).

    Either --pred-probs P.npy --labels L.npy, or SETUP.py[:NAME] returning
    labcoat.Experiment(...): then FOLDS copies of its model are trained with its loss,
    optimizer and step, and each predicts the rows it did not see.

    \b
    Examples:
      labcoat audit labels --pred-probs probs.npy --labels labels.npy --json
      labcoat audit labels examples/digits.py --folds 5 --json
    """
    from labcoat.audit.inputs import read_array, read_labels
    from labcoat.audit.label_errors import label_issues
    from labcoat.extras import require

    require("audit", "audit labels", modules=("cleanlab",))  # before any file is read

    progress = False if (quiet or as_json or not sys.stdout.isatty()) else None
    ids = None
    labels = None
    if labels_file is not None:
        labels, ids = read_labels(labels_file, label_column, id_column)
    if setup is not None:
        if pred_probs is not None:
            raise InputError("audit labels: pass SETUP.py or --pred-probs, not both")
        from labcoat.doctor.experiment_file import load_experiment

        with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
            experiment = load_experiment(setup)
            result = label_issues(
                labels,
                setup=experiment,
                folds=folds,
                seed=seed,
                ids=ids,
                progress=progress,
                ledger=ledger_target(ledger, no_ledger),
            )
        title = setup
    else:
        if pred_probs is None or labels_file is None:
            raise InputError(
                "audit labels: pass --pred-probs P.npy and --labels L.npy, or a SETUP.py file"
            )
        result = label_issues(
            labels,
            read_array(pred_probs, "--pred-probs"),
            ids=ids,
            ledger=ledger_target(ledger, no_ledger),
        )
        title = pred_probs
    _finish(result, as_json, f"labels · {title}")


@audit.command("duplicates")
@click.argument("train", type=click.Path(dir_okay=False))
@click.argument("other", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--text-column",
    default=None,
    help="Compare this text column (CSV, JSONL, Parquet); else numeric rows.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Similarity for a near-duplicate (text: Jaccard, default 0.7; arrays: cosine, 0.98).",
)
@click.option(
    "--kind",
    type=click.Choice(["auto", "text", "tensor"]),
    default="auto",
    show_default=True,
    help="Texts or numeric rows (auto: texts when --text-column is given).",
)
@click.option(
    "--num-perm",
    type=click.IntRange(min=16),
    default=128,
    show_default=True,
    help="MinHash permutations (text).",
)
@engine_option
@jobs_option
@address_option
@json_option
@recorded
def duplicates_cmd(
    train,
    other,
    text_column,
    threshold,
    kind,
    num_perm,
    engine,
    n_jobs,
    address,
    as_json,
    ledger,
    no_ledger,
) -> None:
    """Copies and near-copies of TRAIN rows in OTHER, and inside each file.

    Files: CSV, TSV, JSONL, Parquet (with --text-column for text, else every column but
    the id as numbers), .npy or .pt (one example per row).

    \b
    Example:
      labcoat audit duplicates train.jsonl val.jsonl --text-column text --json
    """
    from labcoat.audit.inputs import read_rows
    from labcoat.audit.near_duplicates import duplicates
    from labcoat.extras import require

    if kind == "text" or (kind == "auto" and text_column is not None):  # before any file is read
        require("audit", "audit duplicates of texts", modules=("datasketch",))

    a = read_rows(train, text_column)
    b = None if other is None else read_rows(other, text_column)
    result = duplicates(
        a,
        b,
        kind=kind,
        threshold=threshold,
        num_perm=num_perm,
        engine=engine,
        n_jobs=n_jobs,
        address=address,
        ledger=ledger_target(ledger, no_ledger),
    )
    _finish(result, as_json, f"duplicates · {train}" + (f" vs {other}" if other else ""))


@audit.command("contamination")
@click.argument("more_corpus", nargs=-1, metavar="")
@click.option(
    "--corpus",
    "corpus",
    multiple=True,
    required=True,
    help="Training corpus: files, directories or globs (--corpus A B C or repeated).",
)
@click.option(
    "--eval",
    "eval_file",
    type=click.Path(dir_okay=False),
    required=True,
    help="Eval items (CSV, JSONL, Parquet).",
)
@click.option("--text-column", required=True, help="Column of --eval with each item's text.")
@click.option(
    "--id-column", default=None, help="Column of --eval naming each item (default: row number)."
)
@click.option(
    "--score-column",
    default=None,
    help="Column of --eval with the model's score: clean vs dirty with error bars.",
)
@click.option(
    "--corpus-column",
    default="text",
    show_default=True,
    help="Text column of JSONL/Parquet corpus files.",
)
@click.option(
    "--n", "n", type=click.IntRange(min=1), default=13, show_default=True, help="n-gram length."
)
@click.option(
    "--method",
    type=click.Choice(["gpt3", "llama2"]),
    default="gpt3",
    show_default=True,
    help="gpt3: dirty on any shared n-gram; llama2: dirty above 80% of tokens in shared spans.",
)
@engine_option
@jobs_option
@address_option
@json_option
@recorded
def contamination_cmd(
    more_corpus,
    corpus,
    eval_file,
    text_column,
    id_column,
    score_column,
    corpus_column,
    n,
    method,
    engine,
    n_jobs,
    address,
    as_json,
    ledger,
    no_ledger,
) -> None:
    """Eval items whose n-grams appear in a training corpus (GPT-3's or Llama 2's method).

    \b
    Example:
      labcoat audit contamination --corpus train/ --eval eval.jsonl --text-column q --json
    """
    from labcoat.audit.benchmark_contamination import contamination
    from labcoat.stats.readers import read_table

    table = read_table(eval_file)
    texts = [str(v) if v is not None else "" for v in table.column(text_column)]
    ids = None if id_column is None else table.ids(id_column).tolist()  # one row per id
    scores = None if score_column is None else table.scores(score_column)
    result = contamination(
        [*corpus, *more_corpus],
        texts,
        n=n,
        method=method,
        ids=ids,
        scores=scores,
        corpus_column=corpus_column,
        engine=engine,
        n_jobs=n_jobs,
        address=address,
        ledger=ledger_target(ledger, no_ledger),
    )
    _finish(result, as_json, f"contamination · {eval_file}")


@audit.command("groups")
@click.argument("train", type=click.Path(dir_okay=False))
@click.argument("test", type=click.Path(dir_okay=False))
@click.option(
    "--group",
    "group_column",
    required=True,
    help="Column holding each row's group id (patient, site, source).",
)
@json_option
@recorded
def groups_cmd(train, test, group_column, as_json, ledger, no_ledger) -> None:
    """Group ids present in both TRAIN and TEST (CSV, TSV, JSONL, Parquet).

    \b
    Example:
      labcoat audit groups train.csv test.csv --group patient_id --json
    """
    from labcoat.audit.group_leakage import groups
    from labcoat.stats.readers import read_table

    a = read_table(train).labels(group_column)
    b = read_table(test).labels(group_column)
    result = groups(list(a), list(b), ledger=ledger_target(ledger, no_ledger))
    _finish(result, as_json, f"groups · {train} vs {test}")
