"""On real eval outputs the verdict equals ``labcoat stats compare`` run by hand.

Uses ``../shared/data/evals`` (MMLU-Pro per-question CSVs of Llama-3.1-8B base vs instruct,
lm-eval ``--log_samples`` output, Inspect logs); skipped where that data is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EVALS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "evals"

CASES = {
    # name: (file A, file B, id column, score column, cluster column)
    "mmlu-pro csv": (
        "mmlupro_instruct.csv",
        "mmlupro_base.csv",
        "question_id",
        "correct",
        "category",
    ),
    "inspect logs": (
        "inspect_eee_data_arc_sonnet.json",
        "inspect_eee_data_arc_qwen.json",
        "id",
        "choice",
        None,
    ),
    "lm-eval samples": ("lmeval_eee", "lmeval_eee", "doc_id", "exact_match", "doc.level"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_verdict_equals_stats_compare_by_hand(cli, tmp_path, name):
    file_a, file_b, on, score, cluster = CASES[name]
    a, b = EVALS / file_a, EVALS / file_b
    if not (a.exists() and b.exists()):
        pytest.skip(f"{a} or {b} is absent (shared eval data)")
    clustered = ["--cluster", cluster] if cluster else []
    by_hand = cli(
        "stats", "compare", a, b, "--on", on, "--score", score, *clustered, "--no-ledger", "--json"
    )
    assert by_hand.code == 0, by_hand.err
    expected = json.loads(by_hand.out)
    fields = [
        f"metric={score.split('.')[0]}",
        f"column={score}",
        f"id={on}",
        "comparison=superiority",
        "sides=two-sided",
        "alpha=0.05",
        f"items={expected['n']}",
    ] + ([f"cluster={cluster}"] if cluster else [])
    ledger = tmp_path / "l.db"
    added = cli(
        "ledger",
        "add",
        name,
        "--predict",
        "A differs from B",
        "--ledger",
        ledger,
        *[x for f in fields for x in ("--plan-field", f)],
    )
    assert added.code == 0, added.err
    got = cli("verdict", 1, "--a", a, "--b", b, "--ledger", ledger, "--json")
    assert got.code in (0, 1, 4), got.err
    verdict = json.loads(got.out)
    assert verdict["estimate"] == pytest.approx(expected["diff"], abs=1e-12)
    assert verdict["ci"] == pytest.approx(expected["ci"], abs=1e-12)
    assert verdict["pvalue"] == pytest.approx(expected["pvalue"], rel=1e-9, abs=1e-15)
    assert verdict["n"]["paired"] == expected["n"]
    only = expected["n_dropped_a"] + expected["n_dropped_b"]
    assert ("dropped" in {d["kind"] for d in verdict["deviations"]}) == bool(only)
