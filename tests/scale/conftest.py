"""Shared data for the scale tests: the replication's Chinchilla points and synthetic laws."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

CHINCHILLA_CSV = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared"
    / "data"
    / "chinchilla"
    / "svg_extracted_data.csv"
)


def chinchilla_points(drop_highest: int = 5):
    """(N, D, L) from Figure 4 of Hoffmann et al., D = FLOP / 6N, minus the highest losses."""
    if not CHINCHILLA_CSV.is_file():
        pytest.skip(f"{CHINCHILLA_CSV} is not available")
    with CHINCHILLA_CSV.open() as fh:
        rows = list(csv.DictReader(fh))
    N = np.array([float(r["Model Size"]) for r in rows])
    C = np.array([float(r["Training FLOP"]) for r in rows])
    L = np.array([float(r["loss"]) for r in rows])
    keep = np.sort(np.argsort(L, kind="stable")[: len(L) - drop_highest])
    return N[keep], C[keep] / (6 * N[keep]), L[keep]


def chinchilla_law(N, D, E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37):
    return E + A * N**-alpha + B * D**-beta


def synthetic_runs(n=60, noise=0.01, seed=0, n_range=(7, 10), d_range=(9, 12)):
    rng = np.random.default_rng(seed)
    N = 10 ** rng.uniform(*n_range, n)
    D = 10 ** rng.uniform(*d_range, n)
    return N, D, chinchilla_law(N, D) * np.exp(rng.normal(0, noise, n))


def curve_runs(x=None, noise=0.01, seed=0, E=2.0, A=50.0, alpha=0.5):
    rng = np.random.default_rng(seed)
    x = np.logspace(2, 5, 40) if x is None else x
    return x, (E + A * x**-alpha) * np.exp(rng.normal(0, noise, x.size))
