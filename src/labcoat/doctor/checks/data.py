"""The data layer: are the labels, inputs and splits usable, and do inputs carry signal at all?"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from labcoat.doctor.case import Case, ProbeFailed
from labcoat.doctor.features import flat, inputs_are_ids, not_features, row_hashes
from labcoat.doctor.losses import ignore_index
from labcoat.doctor.registry import check
from labcoat.doctor.targets import skip_probe
from labcoat.findings import Outcome, failed, passed, skipped, warned

#: features scanned one by one for a leak; wider inputs are images or embeddings
LEAK_SCAN_MAX_FEATURES = 4096


def _labelled(case: Case) -> str | None:
    return "regression targets have no label range" if case.inferred_task == "regression" else None


@check(
    "data.finite",
    layer="data",
    falsifies="inputs or targets contain NaN or Inf",
    predicts="every input and target value is finite",
)
def finite(case: Case) -> Outcome:
    problems = {}
    for name, ex in (("train", case.train), ("val", case.val)):
        for what, t in (("inputs", ex.x), ("targets", ex.y)):
            if not torch.is_floating_point(t):
                continue
            bad = ~torch.isfinite(t.reshape(len(t), -1))
            rows = torch.nonzero(bad.any(dim=1)).flatten()
            if len(rows):
                problems[f"{name} {what}"] = {
                    "examples": len(rows),
                    "values": int(bad.sum()),
                    "first_rows": ex.index[rows[:10]].tolist(),
                    "nan": int(torch.isnan(t).sum()),
                }
    if problems:
        where = ", ".join(f"{k} ({v['examples']} examples)" for k, v in problems.items())
        return failed(f"non-finite values in {where}", **problems)
    return passed("all inputs and targets are finite")


@check(
    "data.labels.range",
    layer="data",
    falsifies="labels fall outside what the model can output",
    predicts="0 <= label < number of model outputs",
    applies=_labelled,
)
def label_range(case: Case) -> Outcome:
    try:
        n_out = case.n_outputs
    except ProbeFailed as exc:
        return skipped(f"needs the model's output size, but {exc}; see the model layer")
    y = torch.cat([case.train.y.reshape(-1), case.val.y.reshape(-1)])
    if torch.is_floating_point(y):
        if n_out == 1 and bool(((y == 0) | (y == 1)).all()):
            return passed(
                "targets are 0/1, one logit each", targets_per_example=case.train.y[0].numel()
            )
        if n_out == 1:
            odd = torch.unique(y[(y != 0) & (y != 1)])[:10].tolist()
            return failed("one logit per target needs 0/1 targets", other_values=odd)
        return failed(
            f"targets are floating point but the model has {n_out} outputs; class labels must be "
            "integers"
        )
    skip = ignore_index(case.loss_fn)
    kept = y[y != skip]
    limit = 2 if n_out == 1 else n_out
    evidence = {
        "model_outputs": n_out,
        "ignore_index": skip,
        "ignored_targets": int((y == skip).sum()),
    }
    if not len(kept):
        return failed(
            f"every target is {skip}, the label the loss skips (ignore_index): nothing to learn "
            "from",
            **evidence,
        )
    lo, hi = int(kept.min()), int(kept.max())
    evidence.update(min_label=lo, max_label=hi)
    train = case.train.y.reshape(len(case.train), -1)
    outside = ((train < 0) | (train >= limit)) & (train != skip)
    if outside.any():
        rows = torch.nonzero(outside.any(1)).flatten()
        return failed(
            f"labels span [{lo}, {hi}] but the model has {n_out} outputs (valid labels 0.."
            f"{limit - 1})",
            first_bad_rows=case.train.index[rows[:10]].tolist(),
            **evidence,
        )
    if lo < 0 or hi >= limit:  # only held-out labels are out of range
        return failed(
            f"held-out labels span [{lo}, {hi}] but the model has {n_out} outputs (valid labels 0.."
            f"{limit - 1})",
            **evidence,
        )
    used = int(torch.unique(kept).numel())
    ignored = (
        f"; {evidence['ignored_targets']} targets are {skip}, which the loss skips"
        if evidence["ignored_targets"]
        else ""
    )
    if n_out > 2 and hi + 1 < n_out / 2 and case.inferred_task == "classification":
        if case.targets_ignored:  # a self-supervised step: its outputs are no classes
            evidence["note"] = (
                f"the model has {n_out} outputs and labels reach {hi}, but the train step does "
                "not use the targets (see update.step.targets)"
            )
            return passed(f"labels in [{lo}, {hi}]; the step does not use them", **evidence)
        return warned(
            f"the model has {n_out} outputs but labels only reach {hi} ({used} classes used)",
            **evidence,
        )
    return passed(f"labels in [{lo}, {hi}] fit {n_out} outputs{ignored}", **evidence)


@check(
    "data.labels.skipped",
    layer="data",
    falsifies="the loss skips a label that real targets carry (ignore_index set to a class, as a "
    "padding index that is also tag 0)",
    predicts="labels the loss skips mark only the ends of sequences (padding) or lie outside the "
    "model's outputs",
    applies=_labelled,
)
def labels_skipped(case: Case) -> Outcome:
    y = case.train.y
    probe = skip_probe(case)
    if isinstance(probe, str):
        return skipped(probe)
    tried, found = probe
    if not found:
        return passed(f"the loss scores every label the targets use ({len(tried)} tried)")
    if len(found) == len(tried):
        return skipped("the loss gives no gradient for any label (see model.grad.coverage)")
    rows = y.reshape(len(y), -1)
    skip = torch.isin(rows, torch.tensor(found, dtype=rows.dtype))
    labels = ", ".join(str(v) for v in found)
    evidence = {"skipped_labels": found, "skipped_targets": int(skip.sum())}
    if rows.shape[1] == 1:
        return warned(
            f"{int(skip.sum())} of {len(rows)} examples are labelled {labels}, which the model "
            "outputs, and the loss skips them (ignore_index), so that class is never learnt; if "
            "the label marks unlabelled examples, use -100, outside the outputs",
            **evidence,
        )
    scored = ~skip
    before = scored.cumsum(1) > 0  # a scored target at or before the position
    after = scored.flip(1).cumsum(1).flip(1) > 0
    interior = int((skip & before & after).sum())
    evidence["between_scored_targets"] = interior
    if interior >= 5 and interior >= 0.01 * rows.numel():
        return failed(
            f"the loss skips label {labels} (ignore_index), which the model outputs and "
            f"{interior} targets carry between scored ones: a real class is never learnt "
            "(padding sits at the ends of a sequence); give ignore_index a value no class uses, "
            "as -100",
            **evidence,
        )
    return passed(
        f"label {labels}, which the loss skips, marks only the ends of sequences (padding)",
        **evidence,
    )


@check(
    "data.labels.degenerate",
    layer="data",
    falsifies="targets carry no variation to learn from",
    predicts="more than one class (or non-constant targets), none overwhelming",
)
def labels_degenerate(case: Case) -> Outcome:
    y = case.train.y
    if case.inferred_task == "regression":
        std = float(y.double().std()) if len(y) > 1 else 0.0
        if not std > 0:
            return failed(
                f"all {len(y)} training targets are equal ({float(y.reshape(-1)[0]):.4g})", std=std
            )
        return passed(f"targets vary (std {std:.4g})", mean=float(y.double().mean()), std=std)
    labels = y.reshape(-1)
    if not torch.is_floating_point(labels):
        labels = labels[labels != ignore_index(case.loss_fn)]  # padding is not a class
    if not len(labels):
        return failed(
            f"every training target is {ignore_index(case.loss_fn)}, the label the loss skips "
            "(ignore_index)"
        )
    values, counts = torch.unique(labels, return_counts=True)
    share = counts.double() / counts.sum()
    evidence = {
        "class_counts": {int(v): int(c) for v, c in zip(values, counts)},
        "examples_per_class": _examples_per_class(case) if y.ndim == 1 else {},
    }
    if len(values) == 1:
        return failed(f"every training target is {int(values[0])}: a single class", **evidence)
    top = float(share.max())
    if top > 0.95 and _weights_classes(case.loss_fn):  # the imbalance is known and handled
        evidence["note"] = (
            f"class {int(values[share.argmax()])} is {top:.1%} of the targets; the loss weights "
            "the classes (weight or pos_weight)"
        )
    elif top > 0.95:
        return warned(
            f"class {int(values[share.argmax()])} is {top:.1%} of the targets, and the loss does "
            "not weight the classes (weight= or pos_weight=): the rest may never be predicted",
            **evidence,
        )
    return passed(f"{len(values)} classes, largest {top:.1%}", **evidence)


def _weights_classes(loss_fn: Any) -> bool:
    """Whether the loss weights classes (``weight`` or ``pos_weight`` of PyTorch's losses, or a
    ``functools.partial`` passing one)."""
    import functools

    while isinstance(loss_fn, functools.partial):
        if any(loss_fn.keywords.get(k) is not None for k in ("weight", "pos_weight")):
            return True
        loss_fn = loss_fn.func
    return any(getattr(loss_fn, k, None) is not None for k in ("weight", "pos_weight"))


def _examples_per_class(case: Case, per_class: int = 2) -> dict[int, list[dict]]:
    """A few raw examples of each class: the first thing a person checks by eye."""
    out: dict[int, list[dict]] = {}
    y = case.train.y
    for label in torch.unique(y[y != ignore_index(case.loss_fn)])[:20].tolist():
        rows = torch.nonzero(y == label).flatten()[:per_class]
        out[int(label)] = [
            {
                "row": int(case.train.index[r]),
                "x": [
                    round(v, 3) if isinstance(v, float) else v
                    for v in case.train.x[r].reshape(-1)[:16].tolist()
                ],
            }
            for r in rows
        ]
    return out


#: one input holding more than this share of the rows is a loader returning one item; repeats
#: spread over many inputs (repeated sentences, boilerplate) are a note
MOSTLY_ONE_INPUT = 0.5


@check(
    "data.inputs.duplicates",
    layer="data",
    falsifies="examples are copies of one input (a loader returning the same item)",
    predicts="most training inputs are distinct",
)
def inputs_duplicates(case: Case) -> Outcome:
    # labcoat's own split draws identical inputs together: copies may all sit on one side
    hashes = row_hashes(case.train.x)
    if len(case.val) and tuple(case.val.x.shape[1:]) == tuple(case.train.x.shape[1:]):
        hashes = hashes + row_hashes(case.val.x)
    unique = len(set(hashes))
    n = len(hashes)
    evidence = {"examples": n, "distinct_inputs": unique}
    if unique == 1 and n > 1:
        return failed(f"all {n} inputs are identical", **evidence)
    _, counts = np.unique(np.array(hashes, dtype=object), return_counts=True)
    top = int(counts.max())
    evidence["most_repeated_input"] = top
    if top > MOSTLY_ONE_INPUT * n:
        return warned(
            f"one input is {top} of the {n} rows ({unique} distinct): a loader that "
            "returns the same item for most indices?",
            **evidence,
        )
    if unique < 0.5 * n:  # repeats spread over many inputs: a fact of the data, not a bug
        evidence["note"] = (
            f"only {unique} of {n} inputs are distinct, each repeated about "
            f"{n / unique:.1f} times (the most {top}): repeated examples weigh more in training"
        )
    return passed(f"{unique} of {n} inputs are distinct", **evidence)


#: share of the features that may be constant before that is itself suspicious (a zeroed
#: input, a preprocessing step that wiped most columns)
MOSTLY_CONSTANT = 0.5
#: how improbable a random split must make a column's held-out values, constant in training,
#: for them to count as a difference between the sides
FEATURE_SHIFT_P = 1e-3


@check(
    "data.features.constant",
    layer="data",
    falsifies="input features do not vary across examples (all of them, most of them, or one "
    "constant in training that varies in validation)",
    predicts="most features vary across training examples, and a feature constant in training "
    "is constant at the same value in validation",
    applies=not_features,
)
def features_constant(case: Case) -> Outcome:
    x = flat(case.train.x)
    constant = np.flatnonzero(np.ptp(x, axis=0) == 0)
    d = x.shape[1]
    evidence: dict[str, Any] = {
        "features": d,
        "constant": len(constant),
        "constant_columns": constant[:20].tolist(),
    }
    if len(constant) == d:
        return failed(f"none of the {d} features varies across {len(x)} examples", **evidence)
    if not len(constant):
        return passed(f"all {d} features vary", **evidence)
    # a constant column gets no weight in training: one that varies in validation is read there
    # by a model that never learned it (a feature broken in the training pipeline only). A rare
    # value (a one-hot category of a few rows) lands only in validation by chance now and then:
    # it counts only where that is improbable, as a random split would put all of those rows
    # there with probability share ** rows (Bonferroni over the constant columns)
    shifted: list[int] = []
    if len(case.val) and tuple(case.val.x.shape[1:]) == tuple(case.train.x.shape[1:]):
        val = flat(case.val.x)
        share = len(val) / (len(val) + len(x))
        for j in constant:
            rows = int((val[:, j] != x[0, j]).sum())
            if rows and share**rows * len(constant) < FEATURE_SHIFT_P:
                shifted.append(int(j))
    evidence["constant_in_training_varying_in_validation"] = shifted[:20]
    if shifted:
        return warned(
            f"{len(shifted)} features are constant in training but vary in the held-out data "
            f"(columns {', '.join(map(str, shifted[:5]))}; {case.split_owner}): the model never "
            "learns them; does one side's preprocessing differ?",
            **evidence,
        )
    if len(constant) > MOSTLY_CONSTANT * d:
        return warned(
            f"{len(constant)} of {d} features never vary: most of the input carries nothing "
            "(zeroed or overwritten columns?)",
            **evidence,
        )
    # a few constant features are normal (images' blank borders, unused one-hot columns): a
    # fact for the evidence, not something to act on
    evidence["note"] = (
        f"{len(constant)} features are constant in training and validation alike (blank "
        "image borders, unused categories): they carry no information and cost nothing"
    )
    return passed(
        f"{d - len(constant)} of {d} features vary ({len(constant)} constant)", **evidence
    )


#: cosine similarity at which a held-out row counts as a twin of a training row. Set on digits:
#: an honest random split's closest pair reaches 0.980 (centred), a copy with pixel noise of 2 %
#: of the range 0.993-0.997, of 1 % above 0.998. Integer inputs (token ids, category codes) have
#: no geometry: only exact copies count there.
TWIN_SIMILARITY = 0.99
#: a leak is a share of held-out rows with a training twin at least this far above the share a
#: random split of the same data shows, and improbable under it (one-sided binomial test)
LEAK_EXCESS = 0.1
LEAK_P_VALUE = 1e-3
#: rows compared (a random sample beyond these; the pairwise search grows with their square)
OVERLAP_MAX_TRAIN, OVERLAP_MAX_VAL = 4096, 1024


@check(
    "data.split.overlap",
    layer="data",
    falsifies="held-out examples also appear in the training data (copies or near-copies)",
    predicts=(
        "no more validation inputs have a copy or near-copy in training than a random split of "
        "the same data gives"
    ),
)
def split_overlap(case: Case) -> Outcome:
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    from labcoat.audit import duplicates

    tokens = not torch.is_floating_point(case.train.x)  # ids, codes: only exact copies count
    rng = np.random.default_rng(case.seed)
    train, val = (
        ex if len(ex) <= most else ex.take(np.sort(rng.choice(len(ex), most, replace=False)))
        for ex, most in ((case.train, OVERLAP_MAX_TRAIN), (case.val, OVERLAP_MAX_VAL))
    )
    xtr, xva = (ex.x.reshape(len(ex), -1) for ex in (train, val))
    if xtr.shape[1] != xva.shape[1]:
        return skipped(
            f"training inputs have {xtr.shape[1]} values and validation inputs {xva.shape[1]}: no "
            "row of one can copy the other"
        )
    if not tokens:  # half precision has no NumPy form
        xtr, xva = xtr.float(), xva.float()
    found = duplicates(
        xtr, xva, kind="tensor", threshold=1.0 if tokens else TWIN_SIMILARITY, ledger=False
    )
    n_train, n_val = found.n_a, found.n_b
    twins = found.rows("b")
    exact = sorted({p.b for p in found.exact_pairs})
    # the chance a row has a twin among the others of its own split: what a random split shows
    alike = sum(len(group) for group in found.within["a"])
    chance = (alike + 0.5) / (n_train + 1)
    share = len(twins) / n_val
    p_value = float(stats.binomtest(len(twins), n_val, chance, alternative="greater").pvalue)
    evidence = {
        "val_examples": n_val,
        "in_train": len(exact),
        "near_copies": len(twins) - len(exact),
        "share": share,
        "random_split_share": chance,
        "pvalue": p_value,
        "similarity": "exact only (integer inputs)" if tokens else TWIN_SIMILARITY,
        "first_val_rows": val.index[twins[:10]].tolist() if twins else [],
        "first_pairs": [
            [int(train.index[p.a]), int(val.index[p.b]), round(p.similarity, 4)]
            for p in found.pairs[:10]
        ],
        "split": "user" if case.val_given else "labcoat",
        "sampled": (len(train), len(val)) != (len(case.train), len(case.val)),
    }
    whose = case.split_owner
    said = (
        f"{len(twins)} of {n_val} validation inputs ({share:.0%}) have a twin in training ("
        f"{len(exact)} exact, {len(twins) - len(exact)} near"
        + ("" if tokens else f", cosine >= {TWIN_SIMILARITY}")
        + f"), where a random split of this data gives {chance:.0%}"
    )
    if p_value < LEAK_P_VALUE and share - chance >= LEAK_EXCESS:
        return failed(f"{said}: held-out data copies training data, in {whose}", **evidence)
    if p_value < LEAK_P_VALUE:
        return warned(f"{said}: more copies than chance, in {whose}", **evidence)
    if not twins:
        return passed(
            f"none of {n_val} validation inputs has a twin in training, in {whose}", **evidence
        )
    return passed(f"{said}: as a random split would, in {whose}", **evidence)


def _grouped(case: Case) -> str | None:
    return None if case.train.groups is not None else "no groups= given"


@check(
    "data.split.groups",
    layer="data",
    falsifies="a group (patient, document, source) has rows on both sides of the split",
    predicts="each group id given in groups= is in training or in validation, not both",
    applies=_grouped,
)
def split_groups(case: Case) -> Outcome:
    from labcoat.audit import groups

    found = groups(case.train.groups, case.val.groups, ledger=False)
    evidence = found.to_dict()
    del evidence["findings"]
    evidence["split"] = "user" if case.val_given else "labcoat"
    whose = case.split_owner
    if found.shared:
        named = ", ".join(
            f"{g.group!r} ({g.n_a} train, {g.n_b} val rows)" for g in found.shared[:5]
        )
        more = f" and {found.n_shared - 5} more" if found.n_shared > 5 else ""
        return failed(
            f"{found.n_shared} of {found.groups_b} validation groups also have training rows ("
            f"{found.rows_b_leaked} of {found.rows_b} validation rows): {named}{more}, in {whose}; "
            "split by group (GroupShuffleSplit) or let labcoat split with groups=",
            **evidence,
        )
    return passed(
        f"no group is on both sides ({found.groups_a} training vs {found.groups_b} validation "
        f"groups), in {whose}",
        **evidence,
    )


@check(
    "data.leak.feature",
    layer="data",
    falsifies="a single feature gives the label away (target leakage)",
    predicts="no one feature alone predicts held-out labels almost perfectly",
    applies=lambda case: (
        not_features(case) or (None if case.inferred_task != "sequence" else "sequence targets")
    ),
)
def leak_feature(case: Case) -> Outcome:
    xtr, xva = flat(case.train.x), flat(case.val.x)
    if xtr.shape[1] > LEAK_SCAN_MAX_FEATURES:
        return skipped(
            f"{xtr.shape[1]} features is too many for a per-feature scan (limit "
            f"{LEAK_SCAN_MAX_FEATURES})"
        )
    ytr, yva = (
        case.train.y.reshape(len(xtr), -1)[:, 0].numpy(),
        case.val.y.reshape(len(xva), -1)[:, 0].numpy(),
    )
    if case.inferred_task == "regression":
        scores = np.array([_abs_spearman(xva[:, j], yva) for j in range(xtr.shape[1])])
        threshold, what = 0.99, "|Spearman rho| with the target"
    else:
        scores = np.array(
            [_single_feature_accuracy(xtr[:, j], ytr, xva[:, j], yva) for j in range(xtr.shape[1])]
        )
        chance = _majority_rate(yva)
        threshold, what = max(0.98, chance + 0.2), "held-out accuracy from that feature alone"
    best = int(np.nanargmax(scores)) if np.isfinite(scores).any() else 0
    evidence = {
        "feature": best,
        "score": float(scores[best]),
        "measure": what,
        "threshold": threshold,
    }
    suspects = np.flatnonzero(scores >= threshold)
    if len(suspects):
        return _leak_verdict(case, scores, suspects, len(xva), **evidence)
    return passed(f"best single feature reaches {scores[best]:.3f} ({what})", **evidence)


#: one feature alone this good on held-out data is a leak unless declared (classification: held-out
#: accuracy, and at least this far above the majority rate; regression: |Spearman rho| of a
#: single target, i.e. the target is a monotone copy of the feature). Set on the corpus's leaks
#: (a label or target copied or recoded into the features score 1.0) against its strongest honest
#: features (breast cancer's best single feature reaches about 0.92).
LEAK_ACCURACY = 0.99
LEAK_MARGIN = 0.2
LEAK_RHO = 0.9999
#: fewer held-out examples than this cannot tell a perfect feature from a lucky strong one
LEAK_MIN_EXAMPLES = 50


def _leak_verdict(
    case: Case, scores: np.ndarray, suspects: np.ndarray, n_val: int, **evidence
) -> Outcome:
    """Fail on a feature that alone predicts held-out labels (near) perfectly, unless declared in
    ``expect_leaky``; a strong but imperfect feature, or too few held-out examples, is a warning."""
    regression = case.inferred_task == "regression"
    if regression:
        # several target columns (an autoencoder, a denoiser) are expected to track input
        # features one by one: only a single target is held to the leak bar
        single = case.val.y[0].numel() == 1
        bar = LEAK_RHO if single else float("inf")
    else:
        yva = case.val.y.reshape(n_val, -1)[:, 0].numpy()
        bar = max(LEAK_ACCURACY, _majority_rate(yva) + LEAK_MARGIN)
    declared = [int(j) for j in suspects if int(j) in case.expect_leaky]
    leaks = [int(j) for j in suspects if scores[j] >= bar and int(j) not in case.expect_leaky]
    evidence.update(
        suspects=suspects[:10].tolist(), declared=declared, leak_bar=bar, val_examples=n_val
    )
    top = max(leaks or [int(j) for j in suspects], key=lambda j: scores[j])
    said = f"feature {top} alone reaches {scores[top]:.3f} ({evidence['measure']})"
    if leaks and n_val >= LEAK_MIN_EXAMPLES:
        names = ", ".join(str(j) for j in leaks[:5])
        return failed(
            f"{said}: a leak (feature {names} gives the label away); drop it, or declare it with "
            f"expect_leaky=[{names}] if it is meant to determine the label",
            leaks=leaks[:10],
            **evidence,
        )
    if leaks:
        return warned(
            f"{said}, on only {n_val} held-out examples (a leak is called from "
            f"{LEAK_MIN_EXAMPLES})",
            leaks=leaks[:10],
            **evidence,
        )
    if len(declared) == len(suspects):
        return passed(f"{said}, declared in expect_leaky", **evidence)
    return warned(said, **evidence)


def _abs_spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(abs(stats.spearmanr(a, b).statistic))


def _single_feature_accuracy(
    xtr: np.ndarray, ytr: np.ndarray, xva: np.ndarray, yva: np.ndarray, bins: int = 16
) -> float:
    """Held-out accuracy of 'majority label of the feature's bin' (a one-feature lookup table)."""
    if np.ptp(xtr) == 0:
        return 0.0
    edges = np.unique(np.quantile(xtr, np.linspace(0, 1, bins + 1)[1:-1]))
    btr, bva = np.searchsorted(edges, xtr), np.searchsorted(edges, xva)
    labels, ytr_codes = np.unique(ytr, return_inverse=True)
    table = np.zeros((len(edges) + 1, len(labels)))
    np.add.at(table, (btr, ytr_codes), 1)
    predicted = labels[table.argmax(axis=1)][bva]
    return float((predicted == yva).mean())


def _majority_rate(y: np.ndarray) -> float:
    _, counts = np.unique(y, return_counts=True)
    return float(counts.max() / counts.sum())


def _baseline_applies(case: Case) -> str | None:
    if case.inferred_task == "sequence":
        if inputs_are_ids(case):
            return "token ids predicting token sequences: shuffle.random_tokens is their control"
        return "sequence targets"
    if inputs_are_ids(case) and case.train.y.reshape(len(case.train), -1).shape[1] > 1:
        return "token ids with a target per position (a tagger): a bag of tokens cannot place a tag"
    return None


@check(
    "data.signal.baseline",
    layer="data",
    falsifies="inputs carry no information about the labels (misaligned examples, labels "
    "scrambled within batches, wrong label file)",
    predicts="a simple baseline beats chance on held-out data (kNN or linear on numeric features; "
    "a linear model on token counts or kNN on token positions for token ids)",
    applies=_baseline_applies,
)
def signal_baseline(case: Case) -> Outcome:
    limit = 2000 if case.effort == "fast" else 10000
    tokens = inputs_are_ids(case)
    train_x, val_x = case.train.x[:limit], case.val.x[: limit // 2]
    if tokens:
        xtr, xva = token_ids(case, train_x), token_ids(case, val_x)
    else:
        xtr, xva = flat(train_x), flat(val_x)
    ytr = case.train.y[:limit].reshape(len(xtr), -1).numpy()
    yva = case.val.y[: limit // 2].reshape(len(xva), -1).numpy()
    if len(yva) < 20:
        return skipped(
            f"only {len(yva)} held-out examples; a baseline needs at least 20 to be judged"
        )
    if _targets_are_inputs(case):
        return passed(
            "the targets are the inputs (an autoencoder): the inputs carry all of their signal",
            autoencoder=True,
        )
    classification = case.inferred_task == "classification"
    columns = _judged_columns(ytr, yva)
    if not columns:
        if classification:
            return skipped(
                "a single training class leaves nothing to predict (see data.labels.degenerate)"
            )
        return skipped("every target column is constant (see data.labels.degenerate)")
    pipelines = _token_baselines(classification) if tokens else _baselines(classification)

    def judged(score: Any) -> tuple[int, str, dict, float, dict]:
        per_column = {c: score(c) for c in columns}
        trials = sum(len(r) for r in per_column.values())
        column, best = min(
            ((c, name) for c, r in per_column.items() for name in r),
            key=lambda cb: per_column[cb[0]][cb[1]]["pvalue"],
        )
        # Bonferroni over baselines and target columns
        p = min(1.0, per_column[column][best]["pvalue"] * trials)
        return column, best, per_column[column][best], p, per_column

    column, best, result, p_best, per_column = judged(
        lambda c: _scored(pipelines, xtr, ytr[:, c], xva, yva[:, c], classification)
    )
    key = "accuracy" if classification else "r2"
    where = f" on target column {column}" if ytr.shape[1] > 1 else ""
    summary = f"best baseline ({best}){where} scores {result[key]:.3f}"
    if classification:
        summary += f" vs chance {result['chance']:.3f}"
    evidence = {"baselines": per_column[column], "pvalue": p_best, "val_examples": len(yva)}
    if tokens:
        evidence["inputs"] = "token ids (bags of tokens, one-hot tokens per position, kNN)"
    if ytr.shape[1] > 1:
        evidence.update(
            target_columns=ytr.shape[1], judged_columns=columns[:20], best_column=column
        )
    if p_best < 1e-3:
        return passed(f"{summary} (p={p_best:.2g})", **evidence)
    if p_best < SIGNAL_P:  # signal, if weak: what a baseline finds is no bug to act on
        return passed(f"{summary}: weak signal, but signal (p={p_best:.2g})", **evidence)
    # one held-out fifth of a few hundred rows is too few to show a modest signal: every row,
    # predicted by baselines fitted on the other folds, gives the test five times the examples
    xall, yall = np.concatenate([xtr, xva]), np.concatenate([ytr, yva])
    folds = _folds(yall, classification)
    trials = len(pipelines) * len(columns)
    if folds is None:
        detectable = _detectable(yva[:, column], classification, trials)
        evidence["detectable"] = detectable
        if detectable["too_few"]:
            return skipped(_too_few(summary, p_best, len(yva), detectable), **evidence)
        return failed(
            f"{summary}: no better than chance (p={p_best:.2g}); are inputs and labels aligned?",
            **evidence,
        )
    column, best, result, p_oof, per_oof = judged(
        lambda c: _scored_out_of_fold(pipelines, xall, yall[:, c], folds, classification)
    )
    p_oof = min(1.0, 2 * p_oof)  # a second look at the same question (Bonferroni)
    oof = f"out of fold over all {len(yall)} rows, {best}{where} scores {result[key]:.3f}"
    evidence.update(out_of_fold=per_oof[column], pvalue_out_of_fold=p_oof, rows=len(yall))
    if p_oof < 1e-3:  # the rescue needs the strong level: a weak one passes chance too often
        return passed(
            f"{summary} on {len(yva)} held-out rows (p={p_best:.2g}), too few to show the "
            f"signal; {oof} (p={p_oof:.2g})",
            **evidence,
        )
    detectable = _detectable(yall[:, column], classification, 2 * trials)
    evidence["detectable"] = detectable
    if detectable["too_few"]:
        return skipped(_too_few(f"{summary}; {oof}", p_oof, len(yall), detectable), **evidence)
    return failed(
        f"{summary}: no better than chance (p={p_best:.2g}; {oof}, p={p_oof:.2g}); are inputs "
        "and labels aligned?",
        **evidence,
    )


#: the p-value below which a baseline's agreement with the labels counts as signal
SIGNAL_P = 0.05
#: the data are too few to show signal when a baseline would have to beat chance by more than
#: this (accuracy, classes) or correlate with the targets above this (regression) for the test
#: to call it signal: no signal there is no evidence against a modest one. Out of fold over two
#: balanced classes the margin is 0.08 at 512 rows and 0.10 at 320 (labels scrambled within
#: batches still fail there), 0.13 at 200 and 0.16 at 120 (not judged); ten classes reach 0.125
#: at about 75 rows
DETECTABLE_MARGIN = 0.125
DETECTABLE_CORRELATION = 0.3


def _detectable(y: np.ndarray, classification: bool, trials: int) -> dict:
    """The weakest signal the test could show on these rows at p < 1e-3 (Bonferroni over
    ``trials``): the accuracy over the agreement of predictions independent of the labels
    (classes), or the correlation (regression); ``too_few`` when it is more than a modest
    one."""
    from statistics import NormalDist

    n = len(y)
    z = NormalDist().inv_cdf(1 - 1e-3 / max(trials, 1))
    if classification:
        _, counts = np.unique(y, return_counts=True)
        agree = float(((counts / n) ** 2).sum())  # chance agreement of independent predictions
        margin = z * float(np.sqrt(agree * (1 - agree) / n))
        return {
            "rows": n,
            "chance_agreement": agree,
            "accuracy_needed": agree + margin,
            "margin": margin,
            "too_few": margin > DETECTABLE_MARGIN,
        }
    r = float(np.tanh(z / np.sqrt(max(n - 3, 1))))
    return {"rows": n, "correlation_needed": r, "too_few": r > DETECTABLE_CORRELATION}


def _too_few(summary: str, p: float, rows: int, detectable: dict) -> str:
    """Why no signal on these rows says nothing: what a signal would have needed to show."""
    if "margin" in detectable:
        need = (
            f"a baseline would need accuracy {detectable['accuracy_needed']:.2f} against "
            f"{detectable['chance_agreement']:.2f} by chance"
        )
    else:
        need = f"a baseline would need a correlation of {detectable['correlation_needed']:.2f}"
    return (
        f"{summary} (p={p:.2g}), but {rows} rows are too few to show a modest signal ({need} "
        "to count): not judged; the overfit and shuffle controls still are"
    )


#: folds of the out-of-fold baselines, run when the held-out rows show no signal
SIGNAL_FOLDS = 5


def _folds(y: np.ndarray, classification: bool) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Train/held-out row indices of :data:`SIGNAL_FOLDS` folds (stratified by the first
    target column for classes), or None when some class has fewer rows than folds."""
    from sklearn.model_selection import KFold, StratifiedKFold

    first = y[:, 0]
    if classification:
        _, counts = np.unique(first, return_counts=True)
        if counts.min() < SIGNAL_FOLDS:
            return None
        splitter: Any = StratifiedKFold(SIGNAL_FOLDS, shuffle=True, random_state=0)
    else:
        splitter = KFold(SIGNAL_FOLDS, shuffle=True, random_state=0)
    return list(splitter.split(np.zeros(len(first)), first))


#: target columns a baseline is fitted to; wider targets (images, embeddings) are sampled evenly
BASELINE_MAX_COLUMNS = 8


def _judged_columns(ytr: np.ndarray, yva: np.ndarray) -> list[int]:
    """Target columns that vary in both the training and the held-out data (a constant column,
    such as an always-blank pixel or a fixed output, has nothing to predict), evenly sampled."""
    varying = [c for c in range(ytr.shape[1]) if np.ptp(ytr[:, c]) > 0 and np.ptp(yva[:, c]) > 0]
    if len(varying) <= BASELINE_MAX_COLUMNS:
        return varying
    picks = np.linspace(0, len(varying) - 1, BASELINE_MAX_COLUMNS).round().astype(int)
    return [varying[i] for i in picks]


def _targets_are_inputs(case: Case) -> bool:
    """True for an autoencoder: every target row equals its input row."""
    x, y = case.train.x, case.train.y
    if x.shape != y.shape or x.dtype.is_floating_point != y.dtype.is_floating_point:
        return False
    return bool(torch.equal(x, y.to(x.dtype)))


#: label permutations behind a multi-class baseline's p-value (its floor is 1 / (this + 1))
AGREEMENT_PERMUTATIONS = 9999


def _agreement_pvalue(pred: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that predictions match the labels more often than they would if they
    were independent of them (the labels permuted against the predictions). Unlike a test of
    accuracy against the majority rate, it keeps its power when one class dominates: a baseline
    that finds all 3 positives among 75 examples is signal, though 100% accuracy against a 96%
    majority rate is not significant. Two classes: Fisher's exact test; more: a permutation
    test."""
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    classes = np.union1d(pred, y)
    if len(classes) <= 2:
        a = classes[-1]
        said, true = pred == a, y == a
        table = [
            [int((said & true).sum()), int((said & ~true).sum())],
            [int((~said & true).sum()), int((~said & ~true).sum())],
        ]
        return float(stats.fisher_exact(table, alternative="greater").pvalue)
    return float(
        stats.permutation_test(
            (y,),
            lambda labels, axis=-1: (pred == labels).mean(axis=axis),
            permutation_type="pairings",
            vectorized=True,
            n_resamples=AGREEMENT_PERMUTATIONS,
            alternative="greater",
            random_state=np.random.default_rng(0),  # accepted by every scipy we support
        ).pvalue
    )


def _positive_scores(fitted: Any, x: np.ndarray) -> np.ndarray:
    """A fitted binary classifier's score for its second class, higher meaning likelier (a
    pipeline has decision_function only where its last step does)."""
    if hasattr(fitted, "decision_function"):
        return np.asarray(fitted.decision_function(x), dtype=float).reshape(len(x))
    return np.asarray(fitted.predict_proba(x), dtype=float)[:, 1]


def _rank_pvalue(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """The area under the ROC curve of ``scores`` for the ``positive`` examples, and its
    one-sided p-value against scores independent of the labels (the labels permuted against
    the ranks). It keeps its power when the positive class is rare (fraud, a rare diagnosis:
    8 positives in 800), where a majority vote of neighbours never names one and a test of
    the votes has nothing to count."""
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    ranks = stats.rankdata(scores)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    auc = float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    p = stats.permutation_test(
        (positive.astype(float),),
        lambda labels, axis=-1: (labels * ranks).sum(axis=axis),
        permutation_type="pairings",
        vectorized=True,
        n_resamples=AGREEMENT_PERMUTATIONS,
        alternative="greater",
        random_state=np.random.default_rng(0),
    ).pvalue
    return auc, float(p)


def _baselines(classification: bool) -> dict[str, tuple[Any, slice]]:
    """kNN and linear baselines on standardised features, each with the columns it reads."""
    from sklearn.linear_model import Ridge, RidgeClassifier
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if classification:
        models = {"knn": KNeighborsClassifier(n_neighbors=5), "linear": RidgeClassifier(alpha=1.0)}
    else:
        models = {"knn": KNeighborsRegressor(n_neighbors=5), "linear": Ridge(alpha=1.0)}
    return {
        name: (make_pipeline(StandardScaler(), est), slice(None)) for name, est in models.items()
    }


def _fitted(pipeline: Any, x: Any, y: np.ndarray) -> Any:
    """A fresh copy of ``pipeline`` fitted on ``x``, ``y`` (kNN never asks for more neighbours
    than there are rows)."""
    from sklearn.base import clone

    fitted = clone(pipeline)
    last = fitted.steps[-1][1] if hasattr(fitted, "steps") else fitted
    if hasattr(last, "n_neighbors"):
        last.set_params(n_neighbors=min(5, len(y)))
    return fitted.fit(x, y)


def _scored(
    pipelines: dict[str, tuple[Any, slice]],
    xtr: Any,
    ytr: np.ndarray,
    xva: Any,
    yva: np.ndarray,
    classification: bool,
) -> dict:
    """Each baseline fitted on one target column, scored on held-out data with a one-sided
    p-value against chance."""
    results = {}
    for name, (pipeline, cols) in pipelines.items():
        fitted = _fitted(pipeline, xtr[:, cols], ytr)
        scores = _binary_scores(fitted, xva[:, cols], classification)
        results[name] = _score(fitted.predict(xva[:, cols]), scores, yva, classification)
    return results


def _scored_out_of_fold(
    pipelines: dict[str, tuple[Any, slice]],
    x: Any,
    y: np.ndarray,
    folds: list[tuple[np.ndarray, np.ndarray]],
    classification: bool,
) -> dict:
    """As :func:`_scored`, on every row, each predicted by a baseline fitted on the other folds."""
    results = {}
    for name, (pipeline, cols) in pipelines.items():
        pred = np.empty(len(y), dtype=y.dtype if classification else float)
        scores: np.ndarray | None = np.empty(len(y)) if classification else None
        for train, held in folds:
            fitted = _fitted(pipeline, x[train][:, cols], y[train])
            pred[held] = fitted.predict(x[held][:, cols])
            fold_scores = _binary_scores(fitted, x[held][:, cols], classification)
            if fold_scores is None or scores is None:
                scores = None
            else:
                scores[held] = fold_scores
        results[name] = _score(pred, scores, y, classification)
    return results


def _binary_scores(fitted: Any, x: Any, classification: bool) -> np.ndarray | None:
    """A two-class baseline's scores for its second class (None otherwise)."""
    if not classification or len(fitted.classes_) != 2:
        return None
    return _positive_scores(fitted, x)


def _score(
    pred: np.ndarray, scores: np.ndarray | None, y: np.ndarray, classification: bool
) -> dict:
    """A baseline's held-out predictions against the targets, with a one-sided p-value against
    chance."""
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    if classification:
        result = {
            "accuracy": float((pred == y).mean()),
            "chance": _majority_rate(y),
            "pvalue": _agreement_pvalue(pred, y),
        }
        classes = np.unique(y)
        if scores is not None and len(classes) == 2:
            # the rare class rarely wins a vote: rank the examples by the baseline's score
            auc, p_rank = _rank_pvalue(scores, y == classes[1])
            result.update(auc=auc, pvalue_votes=result["pvalue"], pvalue_ranks=p_rank)
            # the better of two tests of one baseline, each counted (Bonferroni)
            result["pvalue"] = min(1.0, 2 * min(p_rank, result["pvalue"]))
        return result
    r = 0.0 if np.ptp(pred) == 0 else float(stats.pearsonr(pred, y).statistic)
    p = 1.0 if np.ptp(pred) == 0 else float(stats.pearsonr(pred, y, alternative="greater").pvalue)
    r2 = 1 - float(((pred - y) ** 2).mean() / max(y.var(), 1e-300))
    return {"r2": r2, "correlation": r, "pvalue": p}


def token_ids(case: Case, x: torch.Tensor) -> np.ndarray:
    """Token-id inputs as (rows, positions) int64, each value offset by its input field's
    number (``input_ids`` and ``attention_mask`` of a dict batch never share a token), so that
    a bag of them counts each field's tokens apart."""
    rows = x.reshape(len(x), -1).long().numpy()
    fields = case.train.fields
    if fields is None or len(fields.names) == 1 or not rows.size:
        return rows
    offsets = np.concatenate([np.full(w, i, dtype=np.int64) for i, w in enumerate(fields.widths)])
    # one range for training and held-out rows alike, so that both code a token the same way
    low = min(int(case.train.x.min()), int(case.val.x.min()))
    high = max(int(case.train.x.max()), int(case.val.x.max()))
    return (rows - low) + offsets * (high - low + 1)


#: positions whose tokens the positional baseline codes one by one (longer inputs: the first
#: ones), which keeps its features, and its time, bounded on long sequences
POSITIONS_MAX = 64


class BagOfTokens:
    """Token counts per example as a sparse matrix over the tokens seen in training (a token
    met only in held-out rows counts nowhere), scaled to unit length. ``positional``: count
    each (position, token) pair apart instead, a one-hot code of which token stands where."""

    def __init__(self, positional: bool = False):
        self.positional = positional

    def fit(self, x: np.ndarray, y: Any = None) -> "BagOfTokens":
        self.low = int(x.min()) if x.size else 0
        self.span = int(x.max()) - self.low + 1 if x.size else 1
        self.vocabulary = np.unique(self._encode(x))
        return self

    def _encode(self, x: np.ndarray) -> np.ndarray:
        if not self.positional:
            return x
        # one code per (position, token); tokens outside the training range share none
        clipped = np.clip(x - self.low, -1, self.span)
        return clipped + 1 + np.arange(x.shape[1], dtype=np.int64) * (self.span + 2)

    def transform(self, x: np.ndarray) -> Any:
        from scipy.sparse import csr_matrix
        from sklearn.preprocessing import normalize

        x = self._encode(x)
        col = np.searchsorted(self.vocabulary, x.reshape(-1))
        col = np.minimum(col, len(self.vocabulary) - 1)
        known = self.vocabulary[col] == x.reshape(-1)
        row = np.repeat(np.arange(len(x)), x.shape[1])
        counts = csr_matrix((known.astype(float), (row, col)), shape=(len(x), len(self.vocabulary)))
        return normalize(counts)

    def fit_transform(self, x: np.ndarray, y: Any = None) -> Any:
        return self.fit(x).transform(x)

    def get_params(self, deep: bool = True) -> dict:
        return {"positional": self.positional}

    def set_params(self, **params: Any) -> "BagOfTokens":
        return self


def _token_baselines(classification: bool) -> dict[str, tuple[Any, slice]]:
    """Baselines for token ids: linear models on a bag of tokens (which tokens occur) and on
    one-hot tokens per position over the first :data:`POSITIONS_MAX` positions (which token
    stands where), and kNN under the Hamming distance between sequences, each with the
    positions it reads."""
    from sklearn.linear_model import Ridge, RidgeClassifier
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline

    def linear() -> Any:
        return RidgeClassifier(alpha=1.0) if classification else Ridge(alpha=1.0)

    if classification:
        knn: Any = KNeighborsClassifier(n_neighbors=5, metric="hamming", algorithm="brute")
    else:
        knn = KNeighborsRegressor(n_neighbors=5, metric="hamming", algorithm="brute")
    return {
        "bag_of_tokens": (make_pipeline(BagOfTokens(), linear()), slice(None)),
        "tokens_at_positions": (
            make_pipeline(BagOfTokens(positional=True), linear()),
            slice(0, POSITIONS_MAX),
        ),
        "knn_positions": (make_pipeline(knn), slice(None)),
    }
