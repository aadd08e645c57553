"""``labcoat verdict ID --a A --b B``: judge a hypothesis by the plan registered with it.

Runs exactly the registered analysis (through :func:`labcoat.verdicts.verdict`), records the
verdict in the ledger and prints it; the first line says when the analysis deviated from its
plan. An entry registered with a design is judged on the runs tagged with its factor levels
(or on ``--results``, a table with the factors' columns). Exit 0 confirmed, 1 refuted or a
verdict the registered plan would not have given, 4 inconclusive, 2 bad input (a ledger
failing ``verify`` too, unless ``--unverified``).
"""

from __future__ import annotations

import click

from labcoat.cli.output import console, html_option, json_option, respond


@click.command("verdict")
@click.argument("entry_id", type=int)
@click.option("--a", "file_a", default=None, help="Results of arm A (jsonl/CSV, lm-eval, Inspect).")
@click.option("--b", "file_b", default=None, help="Results of arm B, the baseline or control.")
@click.option(
    "--results",
    default=None,
    help="A design's results: one row per run with the factors, seed and metric (default: "
    "the ledger's runs tagged with the design's factor levels).",
)
@click.option(
    "--score",
    "column",
    default=None,
    help="Score another column than the plan's (reported as a deviation).",
)
@click.option(
    "--metric", default=None, help="Call the metric otherwise than the plan (a deviation)."
)
@click.option(
    "--ledger",
    "location",
    metavar="PATH_OR_URL",
    default=None,
    help="Ledger file or postgresql:// URL (default: $LABCOAT_LEDGER or .labcoat/ledger.db).",
)
@click.option(
    "--unverified",
    is_flag=True,
    help="Judge on a ledger that fails `labcoat ledger verify` (the verdict says so).",
)
@json_option
@html_option()
def verdict(
    entry_id, file_a, file_b, results, column, metric, location, unverified, as_json, html
) -> None:
    """Judge entry ENTRY_ID by its registered plan on the results of arm A and arm B.

    An entry registered with a design is judged on the runs tagged with its factor levels, or
    on --results. Exit 0 confirmed, 1 refuted (or a verdict the registered plan would not have
    given), 4 inconclusive, 2 bad input."""
    from labcoat.ledger import Ledger
    from labcoat.verdicts.judge import verdict as judge
    from labcoat.verdicts.verdict import EXIT_CODES, VerdictResult

    with Ledger(location, create=False) as book:
        result = judge(
            book,
            entry_id,
            a=file_a,
            b=file_b,
            column=column,
            metric=metric,
            unverified=unverified,
            results=results,
        )
    if as_json or not isinstance(result, VerdictResult):
        respond(as_json, result, lambda: result)
    else:
        # the first line whole, however narrow the terminal: it names every deviation
        from labcoat.verdicts.view import headline_text, verdict_details

        out = console()
        out.print(headline_text(result), soft_wrap=True)
        out.print(verdict_details(result))
    if html is not None:
        result.to_html(html)
    code = result.exit_code if isinstance(result, VerdictResult) else EXIT_CODES[result.verdict]
    raise click.exceptions.Exit(code)
