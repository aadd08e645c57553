"""Generated per-question results of two models whose difference is clustered, as MMLU-Pro's
base vs Instruct is by category: each cluster shifts B − A by its own amount."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def paired_clustered(
    rng: np.random.Generator,
    sizes: list[int] | np.ndarray,
    *,
    shift: float = 0.08,
    shift_sd: float = 0.04,
) -> tuple[dict, dict]:
    """Arms A and B (dicts of columns qid, category, correct) on the same questions: each
    question has a base accuracy, B gains ``shift`` plus a cluster effect of sd ``shift_sd``
    (``shift_sd=0``: no clustering at all)."""
    sizes = np.asarray(sizes)
    category = np.repeat([f"c{g:02d}" for g in range(sizes.size)], sizes)
    gain = np.repeat(rng.normal(shift, shift_sd, sizes.size), sizes) if shift_sd else shift
    skill = rng.uniform(0.2, 0.7, category.size)
    a = (rng.random(category.size) < skill).astype(int)
    b = (rng.random(category.size) < np.clip(skill + gain, 0, 1)).astype(int)
    ids = [f"q{i}" for i in range(category.size)]
    return (
        {"qid": ids, "category": category, "correct": a},
        {"qid": ids, "category": category, "correct": b},
    )


def sample(arm: dict, index: np.ndarray) -> dict:
    """The rows ``index`` of an arm (a pilot drawn from the full run)."""
    return {k: np.asarray(v)[index] for k, v in arm.items()}


def write_csv(arm: dict, path: Path) -> Path:
    cols = list(arm)
    rows = zip(*(np.asarray(arm[c]).tolist() for c in cols))
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path
