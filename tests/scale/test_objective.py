"""The batched objective and the batched L-BFGS against scipy, row by row."""

from __future__ import annotations

import numpy as np
from scipy.optimize import approx_fprime, minimize
from scipy.special import huber

from labcoat.scale import objective
from labcoat.scale.lbfgs import minimize_batch

from .conftest import synthetic_runs


def _replication_objective(theta, N, D, L, delta):
    """Besiroglu et al.'s objective, written out as their code does (scipy's huber)."""
    a, b, e, alpha, beta = theta
    pred = np.log(np.exp(a - alpha * np.log(N)) + np.exp(b - beta * np.log(D)) + np.exp(e))
    return huber(delta, np.log(L) - pred).sum()


def test_batched_values_and_gradients_match_the_replication_objective():
    N, D, L = synthetic_runs(n=50)
    logx, logy = np.log(np.vstack([N, D])), np.log(L)
    rng = np.random.default_rng(1)
    theta = np.column_stack(
        [
            rng.uniform(0, 10, 6),
            rng.uniform(0, 10, 6),
            rng.uniform(-1, 1, 6),
            rng.uniform(0.1, 1, 6),
            rng.uniform(0.1, 1, 6),
        ]
    )
    for delta in (1e-3, 0.1):
        values, grads = objective.value_and_grad(theta, logx, logy, delta)
        for row, value, grad in zip(theta, values, grads):
            expected = _replication_objective(row, N, D, L, delta)
            assert np.isclose(value, expected, rtol=1e-12)
            numeric = approx_fprime(row, lambda t: _replication_objective(t, N, D, L, delta), 1e-7)
            assert np.allclose(grad, numeric, rtol=1e-4, atol=1e-6)


def test_weights_are_counts_of_repeated_points():
    N, D, L = synthetic_runs(n=20)
    logx, logy = np.log(np.vstack([N, D])), np.log(L)
    counts = np.random.default_rng(2).integers(0, 3, 20).astype(float)
    theta = np.array([[6.0, 7.5, 0.6, 0.35, 0.37]])
    weighted = objective.value_and_grad(theta, logx, logy, 1e-3, counts)
    idx = np.repeat(np.arange(20), counts.astype(int))
    repeated = objective.value_and_grad(theta, logx[:, idx], logy[idx], 1e-3)
    assert np.allclose(weighted[0], repeated[0]) and np.allclose(weighted[1], repeated[1])


def test_large_exponents_do_not_overflow():
    logx = np.log(np.array([[1e6, 1e9]]))
    values, grads = objective.value_and_grad(np.array([[800.0, 0.0, 0.0]]), logx, np.zeros(2), 1e-3)
    assert np.isfinite(values).all() and np.isfinite(grads).all()


def test_batched_lbfgs_reaches_scipy_minima_of_independent_problems():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(25, 4))
    scales = rng.uniform(0.5, 20, size=(25, 4))

    def fun(x, rows):
        diff = x - centres[rows]
        return (scales[rows] * diff**2).sum(1) + (diff**4).sum(1), 2 * scales[
            rows
        ] * diff + 4 * diff**3

    out = minimize_batch(fun, np.zeros((25, 4)))
    assert out.converged.all()
    for i in range(25):
        ref = minimize(
            lambda x: fun(x[None], np.array([i]))[0][0],
            np.zeros(4),
            method="L-BFGS-B",
            jac=lambda x: fun(x[None], np.array([i]))[1][0],
        )
        assert np.allclose(out.x[i], ref.x, atol=1e-4)
    assert np.allclose(out.x, centres, atol=1e-4)
