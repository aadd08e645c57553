"""The replication's objective, evaluated for many parameter vectors at once.

A power-law sum ``L = E + Σ_j A_j · x_j^(−α_j)`` is fitted in log space: the prediction is
``LSE(a_1 − α_1 log x_1, …, a_k − α_k log x_k, e)`` with ``A_j = exp(a_j)`` and
``E = exp(e)``, and the loss is Huber (δ) between it and ``log L``, summed over points
(Besiroglu et al. 2024, following Hoffmann et al. 2022). Parameter vectors are ordered
``(a_1…a_k, e, α_1…α_k)``, which for Chinchilla is ``(a, b, e, alpha, beta)``.

Every function takes a batch ``theta`` of shape ``(S, 2k + 1)`` and returns one value per row, so
thousands of starts (or bootstrap resamples, as per-point weights) cost a few array passes
instead of thousands of optimiser calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def n_terms(n_params: int) -> int:
    return (n_params - 1) // 2


def log_predict(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    """``log L`` predicted for each row of ``theta`` (S, P) at each point of ``logx`` (k, n)."""
    terms, m = _terms(np.atleast_2d(theta), logx)
    return m + np.log(sum(terms))


def value_and_grad(
    theta: np.ndarray,
    logx: np.ndarray,
    logy: np.ndarray,
    delta: float,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Huber objective (S,) and its gradient (S, P) for every row of ``theta``.

    ``weights`` (n,) or (S, n) multiply each point's loss: bootstrap resamples are counts.
    """
    theta = np.atleast_2d(theta)
    k = n_terms(theta.shape[1])
    terms, m = _terms(theta, logx)
    total = sum(terms)
    r = logy - (m + np.log(total))
    c = np.clip(r, -delta, delta)  # Huber's ψ(r)
    h = c * (r - 0.5 * c)  # ½r² inside the band, δ(|r| − δ/2) outside
    if weights is not None:
        h = h * weights
        c = c * weights
    q = c / total
    grad = np.empty_like(theta)
    for j in range(k):
        qe = q * terms[j]
        grad[:, j] = -qe.sum(axis=1)
        grad[:, k + 1 + j] = qe @ logx[j]
    grad[:, k] = -(q * terms[k]).sum(axis=1)
    return h.sum(axis=1), grad


def _terms(theta: np.ndarray, logx: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The LSE's terms, each divided by exp(m) for stability, and the row-wise max m."""
    k = n_terms(theta.shape[1])
    exponents = [theta[:, j, None] - theta[:, k + 1 + j, None] * logx[j] for j in range(k)]
    e = theta[:, k, None]
    m = np.maximum(exponents[0], e)
    for t in exponents[1:]:
        m = np.maximum(m, t)
    terms = [np.exp(t - m) for t in exponents]
    terms.append(np.exp(e - m))
    return terms, m


@dataclass
class SearchResult:
    """The best fit a search reached: every fitting path (the grid, a learning curve's own
    starts, a custom law's loop) returns one."""

    theta: np.ndarray  # internal parameters of the best fit
    objective: float
    start: np.ndarray  # the start it came from
    n_starts: int
    converged: bool
