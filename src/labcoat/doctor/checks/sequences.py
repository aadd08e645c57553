"""Model-layer checks for token sequences: the model reads the order of its tokens, and the
padding it is told to ignore is ignored, in the form its attention takes it.

Each perturbs the probe batch as the model sees it (the tokens of a dict batch's ``input_ids``
with the fields laid out per position beside them) and compares eval-mode outputs of the
pristine copy, so nothing is trained and nothing of the user's is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from torch import nn

from labcoat.doctor.case import Case
from labcoat.doctor.checks.model import eval_randomness
from labcoat.doctor.features import inputs_are_ids
from labcoat.doctor.inputs import Examples
from labcoat.doctor.losses import ignore_index, skipped_labels
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, failed, passed, skipped, warned

#: training rows data.targets.padding reads
TARGET_ROWS = 4096

#: the probe rows these checks perturb (two forward passes each)
ROWS = 8
#: names of the modules, parameters and buffers that give a model its positions
_POSITIONAL = re.compile(r"pos|rotary|rope|alibi|^w?pe$|^pe_|_pe$", re.IGNORECASE)
_ATTENTION = re.compile(r"attention|attn", re.IGNORECASE)


@dataclass
class TokenView:
    """The probe batch's token ids as ``(N, T)`` and how to give the model changed ones: the
    plain input itself, or the ``input_ids`` of a dict batch (with the fields that have one value
    per position, an ``attention_mask``, moved along when positions move)."""

    case: Case
    x: torch.Tensor
    tokens: torch.Tensor
    field: str | None = None  # the token field of a dict batch
    mask_field: str | None = None  # its attention mask, where it has one

    @property
    def mask(self) -> torch.Tensor | None:
        """The dict batch's attention mask (1 = a real token), or None."""
        if self.mask_field is None:
            return None
        return self.case.train.fields.unpack(self.x)[self.mask_field]

    def with_tokens(self, tokens: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
        """The model's input with ``tokens`` in place of the token ids; ``order`` reorders every
        per-position field the same way (a permutation of the positions)."""
        if self.field is None:
            return tokens
        fields = self.case.train.fields
        parts = fields.unpack(self.x)
        length = self.tokens.shape[1]
        for name, value in parts.items():
            if order is not None and value.ndim == 2 and value.shape[1] == length:
                parts[name] = value[:, order]
        parts[self.field] = tokens
        return fields.pack(parts, "data", "the probe batch", batched=True)


def token_view(case: Case, rows: int = ROWS, examples: Examples | None = None) -> TokenView | str:
    """The probe batch's tokens (or the first ``rows`` of ``examples``), or why it has none."""
    if not inputs_are_ids(case):
        return "the inputs are not token ids"
    x = (case.probe_batch if examples is None else examples).x[:rows]
    fields = case.train.fields
    if fields is None:
        if x.ndim != 2 or x.shape[1] < 3:
            return f"token ids of shape {tuple(x.shape)} have no time axis to test"
        return TokenView(case, x, x)
    parts = fields.unpack(x)
    name = "input_ids" if "input_ids" in parts else None
    if name is None:
        ids = [n for n, v in parts.items() if v.ndim == 2 and not torch.is_floating_point(v)]
        name = ids[0] if ids else None
    if name is None or parts[name].shape[1] < 3:
        return "the dict batch holds no (N, T) token ids to test"
    tokens = parts[name]
    mask = "attention_mask" if "attention_mask" in parts else None
    if mask is not None and parts[mask].shape != tokens.shape:
        mask = None
    return TokenView(case, x, tokens, name, mask)


def attention_modules(model: nn.Module) -> list[str]:
    """Modules that attend (nn.MultiheadAttention, transformer layers, or a class or attribute
    named for attention): attention alone is blind to order, so a model built on it reads
    positions only through a positional component."""
    found = []
    for name, module in model.named_modules():
        kind = type(module).__name__
        if isinstance(
            module, (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
        ) or _ATTENTION.search(kind):
            found.append(name or kind)
        elif name and _ATTENTION.search(name.rpartition(".")[2]):
            found.append(name)
    return found


def positional_parts(model: nn.Module) -> list[str]:
    """Parameters, buffers and modules named for positions (``pos_embed``, ``pe``, ``wpe``,
    ``rotary``, ``alibi_slopes``, ``position_ids``): the model means to read order."""
    named = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    named += [n for n, _ in model.named_modules() if n]
    return sorted({n for n in named if any(_POSITIONAL.search(part) for part in n.split("."))})


def _order_applies(case: Case) -> str | None:
    view = token_view(case)
    if isinstance(view, str):
        return view
    if not attention_modules(case.blueprint.model):
        return (
            "no attention layer: recurrent and convolutional layers read order by construction, "
            "and a bag of tokens is order-blind by design"
        )
    return None


def _time_axis(out: torch.Tensor, length: int) -> int | None:
    """The output's position axis: 1 for (N, T, ...), 2 for cross-entropy's (N, C, T); None for
    one output per sequence."""
    if out.ndim >= 3 and out.shape[1] == length:
        return 1
    if out.ndim >= 3 and out.shape[2] == length:
        return 2
    if out.ndim == 2 and out.shape[1] == length:
        return 1
    return None


def _changed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per row, the largest change between two outputs, relative to the outputs' scale."""
    scale = max(1.0, float(a.abs().max()) if a.numel() else 1.0)
    return (a - b).abs().reshape(len(a), -1).amax(dim=1) / scale


@check(
    "model.positions",
    layer="model",
    falsifies="a model meant to read token order is blind to it (a positional embedding "
    "computed but not added, added after the attention, indexed by the batch instead of the "
    "position, or position ids all reset to zero)",
    predicts="in eval mode, permuting the positions of each sequence's tokens (the tokens held) "
    "changes the output of an attention model, beyond moving its per-position outputs along",
    applies=_order_applies,
)
def positions(case: Case) -> Outcome:
    view = token_view(case)
    assert not isinstance(view, str)  # applies() said so
    tokens = view.tokens
    length = tokens.shape[1]
    order = torch.randperm(length, generator=torch.Generator().manual_seed(case.seed))
    if torch.equal(order, torch.arange(length)):
        order = order.flip(0)
    moved = tokens[:, order]
    rows = (moved != tokens).any(dim=1)
    if not bool(rows.any()):
        return skipped("every probe sequence repeats one token: no order to permute")
    model = case.eval_model
    out = case.forward(model, view.x)
    random = eval_randomness(case, view.x, out)
    if random is not None:
        return skipped(random)
    out_moved = case.forward(model, view.with_tokens(moved, order))
    axis = _time_axis(out, length)
    expected = out if axis is None else out.index_select(axis, order.to(out.device))
    change = _changed(out_moved[rows], expected[rows])
    evidence = {
        "rows": int(rows.sum()),
        "max_change": float(change.max()),
        "attention": attention_modules(case.blueprint.model)[:5],
        "positional": positional_parts(case.blueprint.model)[:10],
        "per_position_output": axis is not None,
    }
    said = "moves along with them" if axis is not None else "stays the same"
    if float(change.max()) > 1e-5:
        return passed(
            "permuting the tokens' positions changes the output (by up to "
            f"{float(change.max()):.3g} of its scale): the model reads order",
            **evidence,
        )
    if evidence["positional"]:
        return failed(
            f"permuting the tokens' positions leaves the output as it was (it {said}): the model "
            f"is blind to order, though it has positional parts "
            f"({', '.join(evidence['positional'][:3])}); is the positional embedding added to the "
            "token embeddings before the attention, indexed by position (not by batch row), with "
            "position ids counting up?",
            **evidence,
        )
    return warned(
        f"permuting the tokens' positions leaves the output as it was (it {said}): attention "
        "without positions reads a set, not a sequence; add a positional embedding (learned, "
        "sinusoidal, rotary or ALiBi) unless order carries nothing here",
        **evidence,
    )


# -- padding ----------------------------------------------------------------------------------
def padding_ids(model: nn.Module) -> list[int]:
    """The token ids the model's embeddings reserve for padding (``padding_idx``)."""
    ids = {
        int(m.padding_idx)
        for m in model.modules()
        if isinstance(m, nn.Embedding) and m.padding_idx is not None
    }
    return sorted(ids)


def pad_positions(case: Case, view: TokenView) -> torch.Tensor | None:
    """Where the probe rows are padding, ``(N, T)`` True at a pad: the dict batch's
    ``attention_mask == 0``, else the one ``padding_idx`` of the model's embeddings; None where
    neither says, or no row mixes padding and tokens."""
    mask = view.mask
    if mask is not None:
        pads = mask == 0
    else:
        ids = padding_ids(case.blueprint.model)
        if len(ids) != 1:
            return None
        pads = view.tokens == ids[0]
    mixed = pads.any(dim=1) & ~pads.all(dim=1)
    return pads if bool(mixed.any()) else None


#: modules whose key-padding mask the doctor reads, with the argument's name and position
_MASK_ARGUMENTS: tuple[tuple[type, str, int], ...] = (
    (nn.TransformerEncoder, "src_key_padding_mask", 2),
    (nn.TransformerEncoderLayer, "src_key_padding_mask", 2),
    (nn.MultiheadAttention, "key_padding_mask", 3),
)


def key_padding_masks(
    case: Case, model: nn.Module, x: torch.Tensor
) -> list[tuple[str, torch.Tensor]]:
    """The key-padding masks the model's attention modules are called with on ``x``, outermost
    first, as ``(module name, mask)``."""
    seen: list[tuple[str, torch.Tensor]] = []

    def hook(name: str, argument: str, index: int):
        def record(_module, args, kwargs):
            mask = kwargs.get(argument, args[index] if len(args) > index else None)
            if isinstance(mask, torch.Tensor):
                seen.append((name, mask.detach()))

        return record

    handles = []
    for name, module in model.named_modules():
        for kind, argument, index in _MASK_ARGUMENTS:
            if type(module) is kind or (kind is nn.MultiheadAttention and isinstance(module, kind)):
                handles.append(
                    module.register_forward_pre_hook(
                        hook(name or type(module).__name__, argument, index), with_kwargs=True
                    )
                )
    try:
        case.forward(model, x)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _mask_form(mask: torch.Tensor, pads: torch.Tensor) -> str | None:
    """What is wrong with a key-padding mask for these pads (True or -inf where a key is
    ignored), or None when it is right."""
    if tuple(mask.shape) != tuple(pads.shape):
        return None  # another layout (a per-head or a 3-D mask): not judged
    pads = pads.to(mask.device)
    if mask.dtype == torch.bool:
        if torch.equal(mask, pads):
            return None
        if torch.equal(mask, ~pads):
            return (
                "a boolean mask that is True at the real tokens: PyTorch ignores the keys where "
                "it is True, so the model attends to the padding only (pass ~mask, or "
                "attention_mask == 0)"
            )
        return "a boolean mask that does not match the padding"
    if torch.is_floating_point(mask):
        ignored = mask < -1e4
        if not bool(ignored.any()):
            values = sorted({float(v) for v in mask.unique()[:4]})
            return (
                f"a float mask of {values}: PyTorch adds a float mask to the attention scores, "
                "so it hides nothing (pass a boolean, attention_mask == 0, or -inf at the pads)"
            )
        if torch.equal(ignored, pads):
            return None
        if torch.equal(ignored, ~pads):
            return "a float mask that is -inf at the real tokens: the model attends to the padding"
        return "a float mask whose -inf entries do not match the padding"
    return None


def _trailing_trim(pads: torch.Tensor) -> tuple[torch.Tensor, int] | None:
    """Rows of the probe batch ending in padding and the length they keep once the padding
    columns all of them share at the end are cut, or None."""
    rows = pads[:, -1] & ~pads.all(dim=1)
    if not bool(rows.any()):
        return None
    shared = pads[rows]
    keep = shared.shape[1]
    while keep > 1 and bool(shared[:, keep - 1].all()):
        keep -= 1
    if keep == shared.shape[1]:
        return None
    return rows, keep


def _padding_applies(case: Case) -> str | None:
    view = token_view(case)
    if isinstance(view, str):
        return view
    if pad_positions(case, view) is None:
        return (
            "no padding the model is told of (an attention_mask field, or an embedding's "
            "padding_idx) in rows that mix padding and tokens"
        )
    return None


@check(
    "model.mask.padding",
    layer="model",
    falsifies="padding reaches the outputs at real tokens: a key-padding mask in the wrong form "
    "(a boolean with the opposite meaning, a 0/1 float mask added to the scores), or padding "
    "read around a mask (mean pooling over padded positions)",
    predicts="each attention's key-padding mask is True (or -inf) exactly at the padding, and "
    "in eval mode the outputs at real tokens stay as they were when the padding's content "
    "changes (dict batches) or trailing padding is cut",
    applies=_padding_applies,
)
def mask_padding(case: Case) -> Outcome:
    view = token_view(case)
    assert not isinstance(view, str)
    pads = pad_positions(case, view)
    assert pads is not None
    model = case.eval_model
    masks = key_padding_masks(case, model, view.x)
    evidence: dict = {
        "rows": len(pads),
        "padded_positions": int(pads.sum()),
        "masks_seen": [name for name, _ in masks][:5],
    }
    for name, mask in masks[:1]:  # the outermost: inner layers see what it made of it
        wrong = _mask_form(mask, pads)
        if wrong is not None:
            evidence["mask_dtype"] = str(mask.dtype).removeprefix("torch.")
            return failed(f"{name} is given {wrong}", module=name, **evidence)
    if view.mask is None and not masks:
        return skipped(
            "the model's attention is given no key-padding mask: nothing says it means to ignore "
            "the padding (a recurrent tagger reads it as input)",
            **evidence,
        )
    out = case.forward(model, view.x)
    random = eval_randomness(case, view.x, out)
    if random is not None:
        return skipped(random, **evidence)
    length = view.tokens.shape[1]
    axis = _time_axis(out, length)
    if view.mask is not None:  # the padding's content changes, the mask stays
        # a real token the padding does not hold already, so that its content changes
        held = view.tokens[pads]
        others = [t for t in view.tokens[~pads].unique().tolist() if bool((held != t).any())]
        if not others:
            return skipped("no real token differs from the padding's ids", **evidence)
        changed = torch.where(pads, torch.full_like(view.tokens, others[0]), view.tokens)
        how = "the padding's token ids change"
        rows, keep = torch.ones(len(pads), dtype=torch.bool), length
        try:
            out2 = case.forward(model, view.with_tokens(changed))
        except Exception as exc:  # noqa: BLE001 - ids the embedding lacks: nothing to judge
            return skipped(f"changed padding ids could not be read ({type(exc).__name__})")
    else:  # the mask comes from the tokens: cut the padding the rows share at the end instead
        trim = _trailing_trim(pads)
        if trim is None:
            return passed(
                "the key-padding mask matches the padding (no trailing padding to cut)", **evidence
            )
        rows, keep = trim
        how = f"trailing padding is cut ({length} -> {keep} positions)"
        try:
            out2 = case.forward(model, view.tokens[rows, :keep])
        except Exception as exc:  # noqa: BLE001 - a model that takes one length only
            return skipped(f"the model cannot take shorter rows ({type(exc).__name__})")
        out = out[rows.to(out.device)]
    real = ~pads[rows, :keep]
    if axis is None:
        change = _changed(out, out2)
    else:
        a = out.narrow(axis, 0, keep).movedim(axis, 1)
        b = out2.narrow(axis, 0, keep).movedim(axis, 1)
        diff = (a - b).abs().reshape(a.shape[0], keep, -1).amax(dim=2)
        scale = max(1.0, float(a.abs().max()))
        change = (diff * real.to(diff.device)).amax(dim=1) / scale
    evidence.update(max_change=float(change.max()), how=how)
    if float(change.max()) > 1e-4:
        where = "the outputs at real tokens" if axis is not None else "the output"
        return failed(
            f"{where} change when {how} (by up to {float(change.max()):.3g} of their scale): "
            "the padding is read (pooling over padded positions, a mask that misses a layer)",
            **evidence,
        )
    return passed(f"the padding is ignored: nothing at real tokens changes when {how}", **evidence)


# -- padded targets (data layer) ---------------------------------------------------------------
def _padded_targets_apply(case: Case) -> str | None:
    view = token_view(case, TARGET_ROWS, case.train)
    if isinstance(view, str):
        return view
    y = case.train.y[:TARGET_ROWS]
    if torch.is_floating_point(y) or tuple(y.shape) != tuple(view.tokens.shape):
        return "targets are not one integer per token position"
    if pad_positions(case, view) is None:
        return (
            "no padding the model is told of (an attention_mask field, or an embedding's "
            "padding_idx) in rows that mix padding and tokens"
        )
    return None


@check(
    "data.targets.padding",
    layer="data",
    falsifies="padded positions are scored: their targets hold a value the loss counts (the pad "
    "id or a real class, ignore_index missing), so the model is trained to predict padding",
    predicts="every target at a padded input position is one the loss skips (ignore_index)",
    applies=_padded_targets_apply,
)
def targets_padding(case: Case) -> Outcome:
    view = token_view(case, TARGET_ROWS, case.train)
    assert not isinstance(view, str)
    pads = pad_positions(case, view)
    assert pads is not None
    y = case.train.y[:TARGET_ROWS]
    at_pads = y[pads]
    values, counts = at_pads.unique(return_counts=True)
    probe_y = case.probe_batch.y
    scored = [
        int(v)
        for v in values.tolist()
        if int(v) not in skipped_labels(case.loss_fn, [case.output], probe_y, [int(v)])
    ]
    share = float(sum(int(c) for v, c in zip(values.tolist(), counts) if int(v) in scored))
    share /= max(1, at_pads.numel())
    evidence = {
        "padded_positions": int(at_pads.numel()),
        "targets_at_padding": {int(v): int(c) for v, c in zip(values.tolist(), counts)},
        "scored_values": scored[:10],
        "scored_share": share,
        "ignore_index": ignore_index(case.loss_fn),
    }
    if scored:
        top = int(values[counts.argmax()])
        return failed(
            f"{share:.0%} of the {at_pads.numel()} padded positions have targets the loss scores "
            f"({', '.join(map(str, scored[:3]))}): the padding counts in the loss and the model "
            f"learns to predict it; set those targets to {ignore_index(case.loss_fn)} "
            f"(ignore_index) or pass ignore_index={top}",
            **evidence,
        )
    return passed(
        f"the targets at all {at_pads.numel()} padded positions are skipped by the loss",
        **evidence,
    )


def _shifted_targets(case: Case) -> str | None:
    if case.inferred_task != "sequence":
        return "only for sequence targets"
    if case.target_offset != 1:
        return "the targets are not the inputs shifted by one token"
    return None


@check(
    "data.targets.shift",
    layer="data",
    explains=("overfit.*", "shuffle.*"),
    falsifies="targets shifted twice: the data holds next tokens and the loss shifts them again, "
    "so output t is scored against token t + 2",
    predicts="where the targets are already the next tokens, the loss scores output t against "
    "target t (it does not shift them itself)",
    applies=_shifted_targets,
)
def targets_shift(case: Case) -> Outcome:
    from labcoat.doctor.targets import layout_of  # the loss's own alignment, read once

    shift = layout_of(case).shift
    evidence = {"targets_offset_from_inputs": 1, "loss_shift": shift}
    if shift:
        return failed(
            "the targets are already the inputs shifted by one token, and the loss shifts them "
            "again (it scores output t against target t + 1): the model is trained to predict "
            "the token after next; shift once, in the data or in the loss",
            **evidence,
        )
    return passed("targets are the next tokens and the loss scores them where they are", **evidence)
