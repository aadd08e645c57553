"""``labcoat replay`` and ``labcoat divergence`` (was ``labcoat diff``): take the user back to a
recorded run's steps."""

from __future__ import annotations

import click

from labcoat.cli.output import json_option, ledger_target, recording_options, respond

PROBES = ("activations", "grads", "watch", "params")


@click.command("replay")
@click.argument("run")
@click.option("--from", "from_step", type=int, default=None, help="First step to replay.")
@click.option("--to", "to_step", type=int, default=None, help="Last step to replay.")
@click.option(
    "--jobs",
    "-j",
    "n_jobs",
    type=int,
    default=1,
    show_default=True,
    help="Replay this many checkpoint segments in parallel.",
)
@click.option(
    "--probe",
    "probes",
    multiple=True,
    type=click.Choice(PROBES),
    help="Attach a probe (repeatable): activations, grads, watch, params.",
)
@click.option(
    "--engine",
    type=click.Choice(["process", "ray"]),
    default="process",
    show_default=True,
    help="Where segments run: local processes or Ray tasks.",
)
@click.option("--rtol", type=float, default=0.0, show_default=True, help="Relative tolerance.")
@click.option("--atol", type=float, default=0.0, show_default=True, help="Absolute tolerance.")
@recording_options()
@json_option
def replay_command(
    run: str,
    from_step: int | None,
    to_step: int | None,
    n_jobs: int,
    probes: tuple[str, ...],
    engine: str,
    rtol: float,
    atol: float,
    ledger: str | None,
    no_ledger: bool,
    as_json: bool,
) -> int:
    """Re-run steps of a recorded RUN (its directory or id) and check they are the same.

    The recorded command runs again (the script as it is now), from the last checkpoint at or
    before --from, skipping earlier iterations, and stops after --to. Every logged value is
    compared; values the script logs now but did not then are returned as hindsight values.
    Exit 1 when a value differs.

    \b
    Example:
      labcoat replay last --from 400 --to 420 --probe activations
    """
    from labcoat.replay.replay import replay

    result = replay(
        run,
        from_step=from_step,
        to_step=to_step,
        n_jobs=n_jobs,
        probes=probes,
        engine=engine,
        rtol=rtol,
        atol=atol,
        ledger=ledger_target(ledger, no_ledger),
    )
    respond(as_json, result, lambda: result)
    return 0 if result.ok else 1


@click.command("divergence")
@click.argument("a")
@click.argument("b", required=False)
@click.option(
    "--bisect",
    is_flag=True,
    help="Replay both runs around the divergence to find the first module that differs.",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="NAME",
    help="Compare only this logged value (repeatable); shows its values side by side.",
)
@click.option(
    "--ranks",
    is_flag=True,
    help="Compare the ranks of one distributed run A: the first step and rank whose "
    "replicated parameters differ.",
)
@click.option("--rtol", type=float, default=0.0, show_default=True, help="Relative tolerance.")
@click.option("--atol", type=float, default=0.0, show_default=True, help="Absolute tolerance.")
@recording_options()
@json_option
def divergence_command(
    a: str,
    b: str | None,
    bisect: bool,
    only: tuple[str, ...],
    ranks: bool,
    rtol: float,
    atol: float,
    ledger: str | None,
    no_ledger: bool,
    as_json: bool,
) -> int:
    """Where two recorded runs A and B part ways: provenance, first divergence, module.

    With --ranks: where the ranks of one distributed run A part ways (the first step and
    rank whose replicated parameters differ).

    Exit 1 when runs with the same provenance diverge (nondeterminism), or when ranks hold
    different copies of a replicated parameter.

    \b
    Example:
      labcoat divergence 20261202-010000-ab12cd 20261202-020000-ef34ab --bisect
      labcoat divergence 20261202-010000-ab12cd --ranks
      labcoat divergence RUN_A RUN_B --only loss --only grad_norm
    """
    from labcoat.errors import InputError

    target = ledger_target(ledger, no_ledger)
    if ranks:
        from labcoat.replay.distributed import rank_diff

        if b is not None or bisect:
            raise InputError(
                "--ranks compares the ranks of one distributed run: pass one RUN, without B "
                "or --bisect"
            )
        result = rank_diff(a, ledger=target)
        respond(as_json, result, lambda: result)
        return 0 if result.ok else 1
    if b is None:
        raise InputError(
            "divergence: pass two runs A B, or one distributed run with --ranks (labcoat "
            "divergence RUN --ranks)"
        )
    from labcoat.replay.diff import divergence

    result = divergence(a, b, bisect=bisect, only=only, rtol=rtol, atol=atol, ledger=target)
    respond(as_json, result, lambda: result)
    return 0 if result.ok else 1
