"""Generated histories for the evals tests: a two-dimensional item response model, so items
differ in difficulty and in which models find them easy, as real benchmarks do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def simulate(n_items: int = 300, abilities=(-1.5, -1.0, -0.5, 0.0, 0.3, 0.6, 1.0, 1.3), seed=0):
    """Per-item probabilities ``(items, models)`` and one 0/1 draw of them."""
    rng = np.random.default_rng(seed)
    a = np.abs(rng.normal(1.2, 0.4, size=(n_items, 2)))
    b = rng.normal(0.0, 1.5, size=n_items)
    theta = np.array([[t, t + rng.normal(0, 0.3)] for t in abilities])
    p = 1.0 / (1.0 + np.exp(-(a @ theta.T / 1.4 - b[:, None])))
    return p, (rng.random(p.shape) < p).astype(float)


@pytest.fixture(scope="module")
def history():
    from labcoat.evals import History

    _, y = simulate()
    return History.from_matrix(
        y, [f"q{i}" for i in range(y.shape[0])], [f"m{j}" for j in range(y.shape[1])]
    )


def new_model(ability: float, n_items: int = 300, seed: int = 0, draw_seed: int = 5):
    """A model outside the history, scored on the same items (same item parameters)."""
    p, _ = simulate(n_items, abilities=(ability,), seed=seed)
    rng = np.random.default_rng(draw_seed)
    return (rng.random(p.shape[0]) < p[:, 0]).astype(float)


def planned(plan, scores) -> dict[str, float]:
    """A model's results on the plan's subset, from its scores on every item."""
    index = plan.index()
    return {k: float(scores[index[k]]) for k in plan.subset}


def status(result, check: str) -> str:
    """The status of ``check``'s finding on ``result``."""
    return next(f for f in result.findings if f.check == check).status


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"the shared reference data is not here ({path})")
    return path
