"""Label errors by confident learning (Northcutt et al. 2021), through cleanlab.

cleanlab's default ``find_label_issues`` (prune by the estimated noise rate, rank by
self-confidence) does the work; this module checks the inputs, and when given a setup instead of
probabilities, computes out-of-fold probabilities by training copies of the user's model
(:meth:`labcoat.Experiment.out_of_fold`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from labcoat._validation import InstanceOf, Interval, Seed, validate_params
from labcoat.audit.checks import AuditResult, check
from labcoat.errors import InputError
from labcoat.findings import Outcome, passed, warned
from labcoat.result import check_kind

#: rows whose probabilities may miss 1 by this much (float32 softmax outputs do)
SUM_TOLERANCE = 1e-3


@dataclass
class LabelIssues(AuditResult):
    """Rows whose given label is likely wrong, most likely error first.

    ``scores`` are cleanlab's self-confidence label-quality scores of the flagged rows (the
    probability the model gives the given label; lower is more suspicious), aligned with
    ``indices``. ``ids`` names the flagged rows when the input had an id column.
    """

    KIND = "audit.labels"

    indices: np.ndarray
    scores: np.ndarray
    n: int
    n_classes: int
    ids: list[Any] | None = None
    source: str = "pred_probs"
    extras: dict[str, Any] = field(default_factory=dict)

    CHECKS = ("audit.labels",)

    @property
    def count(self) -> int:
        return len(self.indices)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "count": self.count,
            "issues": [int(i) for i in self.indices],
            "scores": [float(s) for s in self.scores],
            "n": self.n,
            "n_classes": self.n_classes,
            "source": self.source,
        }
        if self.ids is not None:
            out["ids"] = list(self.ids)
        if self.extras:
            out.update(self.extras)
        out["findings"] = [f.to_dict() for f in self.findings]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LabelIssues":
        """The result again from its ``to_dict()``, which keeps all of it."""
        check_kind(cls, data)
        own = {"kind", "version", "count", "issues", "scores", "n", "n_classes", "source", "ids"}
        return cls(
            np.asarray(data["issues"], dtype=int),
            np.asarray(data["scores"], dtype=float),
            data["n"],
            data["n_classes"],
            data.get("ids"),
            data["source"],
            {k: v for k, v in data.items() if k not in own | {"findings"}},
        )


@check(
    "audit.labels",
    falsifies="the given labels agree with what a model trained out of fold predicts",
    predicts="confident learning flags no rows as likely mislabelled",
)
def _labels_outcome(result: LabelIssues) -> Outcome:
    evidence = {
        "flagged": result.count,
        "rows": result.n,
        "first": [int(i) for i in result.indices[:10]],
    }
    if result.count == 0:
        return passed(f"no likely label errors among {result.n} rows", **evidence)
    share = result.count / max(result.n, 1)
    return warned(
        f"{result.count} of {result.n} rows ({share:.1%}) look mislabelled; the most likely "
        f"first: {', '.join(str(int(i)) for i in result.indices[:5])}",
        **evidence,
    )


@validate_params(
    {"folds": Interval(int, 2), "seed": Seed(), "progress": InstanceOf((bool,), none=True)}
)
def label_issues(
    labels: Any,
    pred_probs: Any = None,
    *,
    setup: Any = None,
    folds: int = 5,
    seed: int = 0,
    ids: Sequence[Any] | None = None,
    progress: bool | None = None,
    ledger: Any = None,
) -> LabelIssues:
    """Find likely label errors with cleanlab's confident learning.

    Give either ``pred_probs`` (out-of-sample probabilities, one row per label) or ``setup``
    (a :class:`labcoat.Experiment`): then ``folds`` copies of its model are trained with its
    loss, optimizer and step, each stopped when its held-out loss stops improving, and each
    predicts the fold it did not see. With a setup, ``labels`` may be None (the setup's own
    targets are audited). ``ledger`` as for :func:`labcoat.diagnose`.
    """
    from labcoat.extras import import_module, require

    require("audit", "auditing labels", modules=("cleanlab",))  # before any copy is trained
    source = "pred_probs"
    rows = None
    extras: dict[str, Any] = {}
    if setup is not None:
        if pred_probs is not None:
            raise InputError("label_issues: pass pred_probs or setup, not both")
        if not callable(getattr(setup, "out_of_fold", None)):
            raise InputError(f"setup: expected labcoat.Experiment(...); got {type(setup).__name__}")
        oof = setup.out_of_fold(folds=folds, seed=seed, progress=progress)
        if labels is not None and not np.array_equal(np.asarray(labels).reshape(-1), oof.labels):
            raise InputError(
                "labels: differ from the setup's targets, which the copies were trained on; "
                "pass labels=None to audit the setup's own labels"
            )
        labels = oof.labels
        pred_probs, source, rows = oof.probs, "setup", oof.rows
        extras["folds"] = oof.summary()
    elif pred_probs is None:
        raise InputError(
            "label_issues: pass pred_probs (out-of-sample probabilities) or "
            "setup=labcoat.Experiment(...)"
        )
    y, probs = check_labels_and_probs(labels, pred_probs)
    if ids is not None and len(ids) != len(y):
        raise InputError(f"ids: got {len(ids)} ids for {len(y)} labels; pass one id per row")

    find_label_issues = import_module(
        "cleanlab.filter", "audit", "auditing labels"
    ).find_label_issues
    get_label_quality_scores = import_module(
        "cleanlab.rank", "audit", "auditing labels"
    ).get_label_quality_scores
    ranked = np.asarray(
        find_label_issues(y, probs, return_indices_ranked_by="self_confidence", n_jobs=1)
    )
    quality = get_label_quality_scores(y, probs, method="self_confidence")
    flagged = ranked if rows is None else rows[ranked]  # rows of the user's data
    result = LabelIssues(
        indices=np.asarray(flagged, dtype=np.int64),
        scores=np.asarray(quality)[ranked],
        n=len(y),
        n_classes=probs.shape[1],
        ids=None if ids is None else [ids[i] for i in ranked],
        source=source,
        extras=extras,
    )
    if ledger is not False:
        result.record(ledger)
    return result


def check_labels_and_probs(labels: Any, pred_probs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer labels in [0, K) and an (N, K) matrix of probabilities whose rows sum to 1."""
    y = _as_numpy(labels, "labels")
    probs = _as_numpy(pred_probs, "pred_probs")
    if y.ndim != 1:
        raise InputError(f"labels: expected one integer class per row (1-D); got shape {y.shape}")
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise InputError(
            f"labels: expected integer class indices; got dtype {y.dtype}; encode classes as 0..K-1"
        )
    if probs.ndim != 2:
        raise InputError(
            "pred_probs: expected an (N, K) array, one row of class probabilities per label; got "
            f"shape {probs.shape}"
        )
    if len(probs) != len(y):
        raise InputError(
            f"pred_probs has {len(probs)} rows but labels has {len(y)}; pass one row of "
            "probabilities per label"
        )
    n_classes = probs.shape[1]
    if len(y) and (y.min() < 0 or y.max() >= n_classes):
        raise InputError(
            f"labels: values run from {int(y.min())} to {int(y.max())} but pred_probs has "
            f"{n_classes} "
            f"columns; labels must be class indices 0..{n_classes - 1}"
        )
    probs = probs.astype(np.float64, copy=False)
    if not np.all(np.isfinite(probs)):
        raise InputError(
            f"pred_probs: {int((~np.isfinite(probs)).any(axis=1).sum())} row(s) hold NaN or inf"
        )
    sums = probs.sum(axis=1)
    off = np.flatnonzero((np.abs(sums - 1) > SUM_TOLERANCE) | (probs.min(axis=1) < 0))
    if off.size:
        i = int(off[0])
        raise InputError(
            f"pred_probs: {off.size} row(s) are not probabilities (row {i} sums to {sums[i]:.4g}); "
            "pass softmax outputs, not logits"
        )
    if len(np.unique(y)) < 2:
        raise InputError("labels: need at least 2 classes to audit; got one")
    return y.astype(np.int64), probs


def _as_numpy(values: Any, name: str) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: could not be read as an array ({exc})") from None
    if arr.dtype == object:
        raise InputError(f"{name}: expected numbers; got mixed or ragged values")
    return arr
