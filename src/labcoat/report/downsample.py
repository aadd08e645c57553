"""Curves thinned for display, keeping every spike: the min and max of each pixel bucket."""

from __future__ import annotations

import numpy as np


def minmax(x, y, buckets: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """At most ``2 * buckets`` points of ``(x, y)``: each bucket's lowest and highest point, in
    step order, so a one-step spike survives however long the run. Non-finite values are kept
    out of the min and max (the alerts mark them)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D and of one length; got {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) <= 2 * buckets:
        return x, y
    edges = np.linspace(0, len(x), buckets + 1).astype(int)
    index = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        part = y[lo:hi]
        pair = sorted({lo + int(np.argmin(part)), lo + int(np.argmax(part))})
        index.extend(pair)
    chosen = np.array(index)
    return x[chosen], y[chosen]
