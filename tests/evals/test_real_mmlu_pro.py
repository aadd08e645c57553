"""Real eval outputs: MMLU-Pro per-question results of Llama-3.1-8B and its Instruct version
(12,032 questions, ../shared/data/evals). A 300-item plan stratified by MMLU-Pro's 14 categories
must estimate each model's full score within its interval, and rank the two models the right
way round or not at all."""

from __future__ import annotations

import pytest

from labcoat.evals import compare, estimate, plan_subset, read_history

from .conftest import shared

SEEDS = range(12)


@pytest.fixture(scope="module")
def mmlu_pro():
    import pandas as pd

    files = [shared("evals", f"mmlupro_{m}.csv") for m in ("base", "instruct")]
    history = read_history(files, id="question_id", score="correct")
    tables = [pd.read_csv(f, dtype={"question_id": str}) for f in files]
    category = tables[0].set_index("question_id").loc[list(history.items), "category"].to_numpy()
    scores = [dict(zip(t.question_id, t.correct.astype(float))) for t in tables]
    return history, category, scores


def test_planned_estimates_cover_the_full_scores_and_rank_instruct_above_base(mmlu_pro):
    history, category, (base, instruct) = mmlu_pro
    full = history.scores.mean(axis=0)
    covered, decisions = 0, []
    for seed in SEEDS:
        plan = plan_subset(history, 300, clusters=category, seed=seed, calibrate=False)
        for j, scores in enumerate((base, instruct)):
            est = estimate({k: scores[k] for k in plan.subset}, plan)
            covered += est.ci.low <= full[j] <= est.ci.high
        cmp = compare(
            {k: instruct[k] for k in plan.subset}, {k: base[k] for k in plan.subset}, plan
        )
        decisions.append(cmp.decision)
    assert full[1] - full[0] > 0.07  # Instruct is better on the whole benchmark
    assert covered >= 0.85 * 2 * len(SEEDS), covered  # 95 % intervals; 24 tries
    assert "B better" not in decisions, decisions  # never ranked the wrong way round
    assert decisions.count("A better") >= len(SEEDS) // 2, decisions
