"""Charts as inline SVG, drawn by matplotlib.

Why matplotlib: it is the best-kept plotting library that needs no JavaScript runtime, and its
SVG output is static, sharp at any zoom and fully offline. Text stays text (searchable,
selectable) and every chart's own marks carry ids (``gid``) so tests can count them in the
rendered page. Axes, ticks and labels are drawn in ``currentColor``, so one SVG reads well in
light and dark mode.
"""

from __future__ import annotations

import io
import math
import re
from typing import Iterable, Mapping, Sequence

from labcoat.report.page import esc

#: a colour no chart uses, swapped for ``currentColor`` after drawing
_INK = "#010203"
#: mid-tone series colours that read on white and on near-black
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#bab0ac")
ALERT = "#e45756"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _style() -> dict:
    return {
        "svg.fonttype": "none",  # text as <text>, not paths
        "svg.hashsalt": "labcoat",  # stable ids: the same data gives the same file
        "font.size": 9,
        "text.color": _INK,
        "axes.labelcolor": _INK,
        "axes.edgecolor": _INK,
        "xtick.color": _INK,
        "ytick.color": _INK,
        "axes.facecolor": "none",
        "figure.facecolor": "none",
        "savefig.facecolor": "none",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
    }


def figure(width: float = 6.4, height: float = 2.8):
    plt = _plt()
    with plt.rc_context(_style()):
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def to_svg(fig, name: str, caption: str = "") -> str:
    """The figure as an inline ``<svg>`` in a ``div.chart`` named ``name``; the figure is closed."""
    plt = _plt()
    buf = io.StringIO()
    with plt.rc_context(_style()):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: inline SVG needs neither
    svg = svg.replace(_INK, "currentColor")
    svg = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', r'<svg \1role="img"', svg, count=1)
    cap = f'<p class="muted">{esc(caption)}</p>' if caption else ""
    return f'<div class="chart" data-chart="{esc(name)}">{svg}{cap}</div>'


def _apply(ax, title: str, xlabel: str, ylabel: str, logy: bool) -> None:
    if title:
        ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")


def line_chart(
    name: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str = "",
    xlabel: str = "step",
    ylabel: str = "",
    hlines: Mapping[str, float] | None = None,
    alerts: Iterable[tuple[float, str]] = (),
    logy: bool = False,
    caption: str = "",
) -> str:
    """One line per series; dashed reference lines (``hlines``); a red tick per alert at its
    step."""
    fig, ax = figure()
    for i, (label, (x, y)) in enumerate(series.items()):
        (ln,) = ax.plot(x, y, color=PALETTE[i % len(PALETTE)], lw=1.2, label=label)
        ln.set_gid(f"series-{i}")
    for j, (label, value) in enumerate((hlines or {}).items()):
        if value is not None and math.isfinite(value):
            ref = ax.axhline(
                value, ls="--", lw=0.9, color=PALETTE[(j + 3) % len(PALETTE)], label=label
            )
            ref.set_gid(f"ref-{j}")
    for k, (step, label) in enumerate(alerts):
        mark = ax.axvline(step, color=ALERT, lw=1.0, alpha=0.8)
        mark.set_gid(f"alert-{k}")
    _apply(ax, title, xlabel, ylabel, logy)
    if len(series) + len(hlines or {}) > 1:
        ax.legend(fontsize=8, loc="best")
    return to_svg(fig, name, caption)


def distribution(
    name: str,
    values: Sequence[float],
    *,
    marks: Mapping[str, float],
    title: str = "",
    xlabel: str = "",
    caption: str = "",
) -> str:
    """A strip of values (one dot each, e.g. shuffled copies' scores) with labelled reference
    lines."""
    import numpy as np

    fig, ax = figure(height=2.0)
    vals = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    jitter = np.random.default_rng(0).uniform(-0.25, 0.25, len(vals))
    dots = ax.scatter(vals, jitter, s=18, color=PALETTE[0], alpha=0.8, label=f"{len(vals)} values")
    dots.set_gid("values")
    for j, (label, value) in enumerate(marks.items()):
        if value is not None and math.isfinite(value):
            ref = ax.axvline(
                value,
                ls="-" if j == 0 else "--",
                lw=1.4 if j == 0 else 1.0,
                color=PALETTE[(j + 1) % len(PALETTE)],
                label=f"{label} {value:.3g}",
            )
            ref.set_gid(f"mark-{j}")
    ax.set_yticks([])
    ax.set_ylim(-0.6, 0.6)
    ax.spines["left"].set_visible(False)
    _apply(ax, title, xlabel, "", False)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3)
    return to_svg(fig, name, caption)


def forest(
    name: str,
    rows: Sequence[tuple[str, float, float, float]],
    *,
    reference: float | None = None,
    title: str = "",
    xlabel: str = "",
    caption: str = "",
) -> str:
    """Estimates with intervals, one row each (label, estimate, low, high), top to bottom."""
    fig, ax = figure(height=max(1.4, 0.36 * len(rows) + 0.9))
    for i, (label, est, lo, hi) in enumerate(rows):
        y = len(rows) - 1 - i
        bar = ax.plot([lo, hi], [y, y], color=PALETTE[0], lw=2.0)[0]
        bar.set_gid(f"interval-{i}")
        ax.plot([est], [y], "o", color=PALETTE[1], ms=5)[0].set_gid(f"estimate-{i}")
    ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
    if reference is not None:
        ax.axvline(reference, ls="--", lw=0.9, color=_INK, alpha=0.6).set_gid("reference")
    _apply(ax, title, xlabel, "", False)
    return to_svg(fig, name, caption)


def band_chart(
    name: str,
    x: Sequence[float],
    y: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    *,
    points: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    logx: bool = True,
    caption: str = "",
    label: str = "fit",
) -> str:
    """A fitted curve with its band and labelled groups of points (e.g. fitted vs held out)."""
    fig, ax = figure()
    ax.fill_between(x, low, high, color=PALETTE[0], alpha=0.25, lw=0).set_gid("band")
    ax.plot(x, y, color=PALETTE[0], lw=1.4, label=label)[0].set_gid("fit")
    for i, (label, (px, py)) in enumerate(points.items()):
        dots = ax.scatter(
            px, py, s=14, color=PALETTE[(i + 1) % len(PALETTE)], label=label, zorder=3
        )
        dots.set_gid(f"points-{i}")
    if logx:
        ax.set_xscale("log")
    _apply(ax, title, xlabel, ylabel, False)
    ax.legend(fontsize=8)
    return to_svg(fig, name, caption)
