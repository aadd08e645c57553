"""Which modules of a model compute differently in train and eval mode, shared by the doctor
(a model handed over in eval mode) and the watch (steps that run in eval mode)."""

from __future__ import annotations

from torch import nn


def mode_dependent(model: nn.Module) -> tuple[str, ...]:
    """The modules, as "name (Type)", whose output depends on train or eval mode: dropout with
    p > 0 (also inside attention and stacked RNNs) and normalisation that keeps running
    statistics."""
    found = []
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            varies = module.p > 0
        elif isinstance(module, nn.modules.batchnorm._NormBase):
            varies = module.track_running_stats
        elif isinstance(module, (nn.RNNBase, nn.MultiheadAttention)):
            varies = module.dropout > 0
        else:
            varies = False
        if varies:
            found.append(f"{name or '<model>'} ({type(module).__name__})")
    return tuple(found)
