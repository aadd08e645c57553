"""Whether the model's output depends on a parameter at all: moving it far and recomputing.

A parameter with an all-zero gradient is either cut off (a bug: ``detach``, ``round()``) or has
no effect on the output whatever its value (a bias whose shift cancels, as before a difference
of two embeddings), which is harmless. Shared by model.grad.coverage and update.params.moved.
"""

from __future__ import annotations

import torch

from labcoat.doctor.case import Case

#: how far a parameter is moved to see whether the output depends on it, relative to its scale
EFFECT_PERTURBATION = 1.0
#: an output that changes less than this, relative to its largest value (at least 1), is taken
#: as unchanged (float32 rounding of a shift that cancels is about 1e-7)
EFFECT_TOLERANCE = 1e-5


def without_effect(case: Case, names: list[str]) -> list[str]:
    """The parameters among ``names`` (each in the graph with an all-zero gradient) that the
    model's output does not depend on at all: moving one far leaves ``model(x)`` unchanged. A
    parameter cut off by ``detach`` or ``round()`` still changes the output, so it is not among
    them; nor is one whose output the loss ignores. The output, not the loss, is compared, so a
    loss cut off from everything (loss x 0) excuses nothing."""
    if not names:
        return []
    return case.probe_once(f"effect of {sorted(names)}", lambda: _without_effect(case, names))


def _without_effect(case: Case, names: list[str]) -> list[str]:
    setup = case.blueprint.fresh()
    setup.model.train()
    x, _ = case.on_device(case.probe_batch.batch())
    params = dict(setup.model.named_parameters())

    def output() -> torch.Tensor:
        torch.manual_seed(case.seed)
        with torch.no_grad():
            out = setup.model(x)
        if not isinstance(out, torch.Tensor):
            raise TypeError("model.forward reports outputs that are not one tensor")
        return out.detach().float()

    try:
        base = output()
        tolerance = EFFECT_TOLERANCE * max(1.0, float(base.abs().max()))
        inert = []
        gen = torch.Generator().manual_seed(case.seed)
        for n in names:
            p = params[n]
            scale = max(float(p.detach().abs().mean()), 0.1) * EFFECT_PERTURBATION
            kept = p.detach().clone()
            with torch.no_grad():
                p.add_(scale * torch.randn(p.shape, generator=gen).to(p))
            moved = output()
            with torch.no_grad():
                p.copy_(kept)
            if float((moved - base).abs().max()) <= tolerance:
                inert.append(n)
    except Exception:  # noqa: BLE001 - when the output cannot be recomputed, nothing is excused
        return []
    return inert
