"""The data layer, row by row: corrupted rows that still look like data.

A pipeline that breaks on some rows rarely crashes: a failed image decode becomes a blank
array, a missing measurement becomes 0, one class's labels are overwritten with another's.
Each leaves a mark in the data alone, without a reference run: blank rows stand apart from
every other row (no row is nearly blank), a filled-in 0 stands apart from its feature's values
(nothing lies between it and them), a class overwritten with another is missing while the
other is as large as both. None of them is proof (a blank frame, an instrument that reads 0, a
taxonomy with unused ids exist), so each warns, with the rows to look at.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from labcoat.doctor.case import Case
from labcoat.doctor.features import flat, not_features
from labcoat.doctor.losses import ignore_index
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, passed, skipped, warned

#: rows (and share of the rows) that must be blank or filled before that counts: one blank
#: image in a large set is a fact, a handful of them a pattern
MIN_ROWS = 3
MIN_SHARE = 0.005
#: features a row needs for "every feature holds one value" to mean more than a short row
MIN_FEATURES = 4
#: a blank row stands apart when the emptiest non-blank row still sets at least this share of
#: its features off the blank value (a sparse table has rows of every fill, down to nearly blank)
BLANK_GAP = 0.1


def _every_row(case: Case) -> tuple[np.ndarray, torch.Tensor]:
    """Training and held-out inputs as features, with where each row came from: labcoat's own
    split draws identical inputs together, so blank rows may all sit on one side."""
    parts = [case.train]
    if len(case.val) and tuple(case.val.x.shape[1:]) == tuple(case.train.x.shape[1:]):
        parts.append(case.val)
    return flat(torch.cat([p.x for p in parts])), torch.cat([p.index for p in parts])


@check(
    "data.rows.blank",
    layer="data",
    falsifies="rows whose inputs were wiped (zeroed, or set to one fill value) while their "
    "labels were kept: a failed decode or read that returns an empty array",
    predicts="no row holds one value in every feature, or such rows are part of a "
    "continuum (rows nearly as empty exist too, as in sparse counts)",
    applies=not_features,
)
def rows_blank(case: Case) -> Outcome:
    x, index = _every_row(case)
    n, d = x.shape
    if d < MIN_FEATURES:
        return skipped(f"{d} features per row: a row of one value is no sign of wiping there")
    blank = np.ptp(x, axis=1) == 0
    k = int(blank.sum())
    evidence: dict[str, Any] = {"rows": n, "features": d, "blank_rows": k}
    if not k:
        return passed(f"no row holds one value in all {d} features", **evidence)
    values = np.unique(x[blank, 0])
    others = x[~blank]
    if not len(others):
        return skipped("every row is blank (see data.inputs.duplicates)", **evidence)
    # how many features of each other row differ from the blank value: a sparse table's rows
    # come in every count down to 1; rows wiped from dense data leave a gap down to 0
    set_off = (others[:, :, None] != values[None, None, :]).all(axis=2).sum(axis=1)
    emptiest = int(set_off.min())
    evidence.update(
        blank_values=values[:5].tolist(),
        emptiest_other_row_features_set=emptiest,
        median_features_set=float(np.median(set_off)),
        first_blank_rows=index[torch.from_numpy(np.flatnonzero(blank)[:10])].tolist(),
    )
    if k >= max(MIN_ROWS, MIN_SHARE * n) and emptiest >= max(2, BLANK_GAP * d):
        said = ", ".join(f"{v:g}" for v in values[:3])
        return warned(
            f"{k} of {n} rows hold {said} in every one of their {d} features, while "
            f"every other row sets at least {emptiest} features apart: wiped rows (a failed "
            "decode or read returning an empty array) that keep their labels? Look at rows "
            f"{', '.join(map(str, evidence['first_blank_rows'][:5]))}",
            **evidence,
        )
    evidence["note"] = (
        f"{k} rows are blank, as rows nearly as empty are too (the emptiest other row sets "
        f"{emptiest} features): sparse data, not wiped rows"
        if emptiest < max(2, BLANK_GAP * d)
        else f"{k} blank rows: too few to be a pattern"
    )
    return passed(f"{k} of {n} rows are blank, not apart from the rest", **evidence)


#: distinct non-zero values a feature needs before the spacing of its values means anything
#: (a binary or few-level feature has nothing but gaps)
MIN_LEVELS = 10
#: a 0 stands apart when the distance to the feature's nearest other value is this many times
#: the widest gap between neighbouring values in the bulk of them (their central 98 %)
FILL_GAP = 3.0


def _isolated_zero(column: np.ndarray) -> dict | None:
    """The zeros of a feature, when they stand apart from its other values (a fill of missing
    measurements), else None."""
    zero = column == 0
    rest = np.sort(column[~zero])
    if len(np.unique(rest)) < MIN_LEVELS:
        return None
    lo, hi = np.quantile(rest, [0.01, 0.99])
    bulk = np.unique(rest[(rest >= lo) & (rest <= hi)])
    if len(bulk) < 2:
        return None
    widest = float(np.diff(bulk).max())
    above, below = rest[rest > 0], rest[rest < 0]
    distance = min(
        float(above.min()) if len(above) else np.inf, float(-below.max()) if len(below) else np.inf
    )
    if len(above) and len(below):  # 0 lies inside the feature's range: a value like any other
        return None
    if distance > FILL_GAP * widest:
        return {
            "distance": distance,
            "widest_gap": widest,
            "nearest": float(rest[0] if len(above) else rest[-1]),
        }
    return None


@check(
    "data.features.filled",
    layer="data",
    falsifies="missing values were filled with 0 in a feature whose real values lie far from 0 "
    "(NaN replaced by 0 before training)",
    predicts="where a feature holds 0 in some rows, 0 lies among or next to its other values",
    applies=not_features,
)
def features_filled(case: Case) -> Outcome:
    x, _ = _every_row(case)
    n, d = x.shape
    if d > 4096:
        return skipped(f"{d} features per row: images or embeddings, not measurements")
    zeros = (x == 0).sum(axis=0)
    candidates = np.flatnonzero((zeros >= max(MIN_ROWS, MIN_SHARE * n)) & (zeros < n))
    found = {}
    for j in candidates:
        apart = _isolated_zero(x[:, j])
        if apart is not None:
            found[int(j)] = {"zero_rows": int(zeros[j]), **apart}
    evidence: dict[str, Any] = {"features": d, "features_with_zeros": len(candidates)}
    if found:
        evidence["filled"] = dict(list(found.items())[:20])
        j, first = next(iter(found.items()))
        return warned(
            f"{len(found)} features hold 0 far from all their other values (feature {j}: "
            f"{first['zero_rows']} rows at 0, the nearest other value {first['nearest']:.4g}, "
            f"while its values lie at most {first['widest_gap']:.3g} apart): missing values "
            "filled with 0 (NaN replaced by 0)? Impute them or mark them missing",
            **evidence,
        )
    if not len(candidates):
        return passed(f"no feature holds 0 in {MIN_ROWS} rows or more", **evidence)
    return passed(
        f"where features hold 0 ({len(candidates)} of {d}), 0 lies among their values", **evidence
    )


#: a class that absorbed a missing one holds at least this many times the median class
ABSORBED_RATIO = 1.6
#: held-out rows of a class absent from training count when a random split would put all of
#: them there with a probability below this
UNSEEN_P = 1e-3


def _one_label_per_row(case: Case) -> str | None:
    if case.inferred_task != "classification":
        return "needs class labels"
    if case.train.y.reshape(len(case.train), -1).shape[1] != 1:
        return "needs one class label per example"
    return None


@check(
    "data.labels.overwritten",
    layer="data",
    falsifies="one class's labels were overwritten with another's (a mapping that sends two "
    "names to one id, a relabelling applied to one side only)",
    predicts="a class absent from training is absent from the held-out data too, and no class "
    "missing inside the label range sits beside a class as large as two",
    applies=_one_label_per_row,
)
def labels_overwritten(case: Case) -> Outcome:
    skip = ignore_index(case.loss_fn)
    ytr = case.train.y.reshape(-1)
    yva = case.val.y.reshape(-1)
    ytr, yva = ytr[ytr != skip], yva[yva != skip]
    values, counts = torch.unique(ytr, return_counts=True)
    seen = set(values.tolist())
    evidence: dict[str, Any] = {"class_counts": dict(zip(values.tolist(), counts.tolist()))}
    # a class in the held-out rows only: a random split puts all of its rows there with
    # probability share ** rows
    share = len(yva) / max(len(yva) + len(ytr), 1)
    held, held_counts = torch.unique(yva, return_counts=True)
    unseen = {
        int(c): int(k)
        for c, k in zip(held.tolist(), held_counts.tolist())
        if c not in seen and share**k < UNSEEN_P
    }
    if unseen:
        evidence["held_out_only"] = unseen
        c, k = next(iter(unseen.items()))
        return warned(
            f"class {c} labels {k} held-out rows and no training row ({case.split_owner}): its "
            "training labels were overwritten, or the splits come from differently labelled "
            "data",
            **evidence,
        )
    if len(values) < 3:
        return passed(f"{len(values)} classes in training", **evidence)
    lo, hi = int(values.min()), int(values.max())
    holes = sorted(set(range(max(lo, 0), hi + 1)) - seen)
    median = float(counts.double().median())
    top = int(counts.argmax())
    ratio = float(counts[top]) / median
    evidence.update(missing_inside_range=holes[:20], largest_over_median=ratio)
    if holes and len(holes) <= 2 and ratio >= ABSORBED_RATIO:
        return warned(
            f"class {holes[0]} never occurs though classes {lo}..{hi} do, and class "
            f"{int(values[top])} holds {ratio:.1f}x the median class: were class {holes[0]}'s "
            f"labels overwritten with {int(values[top])}?",
            **evidence,
        )
    return passed(
        f"{len(values)} classes; none held out only, none missing beside a double-sized one",
        **evidence,
    )
