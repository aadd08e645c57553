"""Probes: what a replay measures without the script being edited.

* ``activations``: per module and step, statistics of the module's output (mean, std, min,
  max, the count of non-finite numbers, a digest of its bytes) and the first module whose output
  held a non-finite number (hooks fire children first, so it is the innermost one);
* ``grads``: per parameter and step, the norm of its accumulated gradient;
* ``watch``: ``labcoat.watch`` at ``every=1`` over the replayed window; its alerts;
* ``params``: per step, an exact fingerprint of every replicated parameter after the step
  (what ``labcoat divergence RUN --ranks`` compares across ranks).

A probe is attached when the replay reaches its checkpoint and removed when it ends; the
replaying process writes what each probe returns (plain JSON data) for ``labcoat replay``.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any, Callable

from labcoat._validation import OneOf
from labcoat.errors import InputError

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder

PROBES = ("activations", "grads", "watch", "params")


def check_probes(names: Any) -> list[str]:
    """The probes asked for, each once, in order; an unknown name is bad input."""
    known = OneOf(PROBES)
    return list(dict.fromkeys(known.check(name, "--probe") for name in names or ()))


def _tensors(output: Any) -> list[Any]:
    import torch

    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (list, tuple)):
        return [t for o in output for t in _tensors(o)]
    if isinstance(output, dict):
        return [t for o in output.values() for t in _tensors(o)]
    return []


def tensor_stats(tensors: list[Any]) -> dict[str, Any] | None:
    import torch

    floats = [t.detach() for t in tensors if t.is_floating_point() or t.is_complex()]
    if not floats:
        return None
    flat = torch.cat([t.reshape(-1).float().cpu() for t in floats])
    digest = hashlib.sha256()
    for t in floats:
        raw = t.detach().cpu().contiguous().reshape(-1)
        digest.update(memoryview(raw.view(torch.uint8).numpy()))
    finite = torch.isfinite(flat)
    nonfinite = int((~finite).sum())
    good = flat[finite]
    if good.numel():
        mean, std = float(good.mean()), float(good.std()) if good.numel() > 1 else 0.0
        low, high = float(good.min()), float(good.max())
    else:
        mean = std = low = high = math.nan
    return {
        "mean": mean,
        "std": std,
        "min": low,
        "max": high,
        "nonfinite": nonfinite,
        "numel": int(flat.numel()),
        "digest": digest.hexdigest()[:16],
    }


def _module_names(rec: "Recorder") -> list[tuple[str, Any]]:
    several = len(rec.models) > 1
    out = []
    for key, model in rec.models.items():
        for name, module in model.named_modules():
            full = ".".join(p for p in ((key if several else ""), name) if p) or key
            out.append((full, module))
    return out


class _HookProbe:
    """A probe that measures through torch hooks: per step what its hooks saw, and the first
    place a non-finite number showed; the hooks are removed when the replay ends."""

    name = ""

    def __init__(self, rec: "Recorder"):
        self.rec = rec
        self.handles: list[Any] = []
        self.steps: dict[int, dict[str, Any]] = {}
        self.first_nonfinite: dict[str, Any] | None = None

    def on_step_end(self, step: int) -> None:
        pass

    def finish(self) -> dict[str, Any]:
        for h in self.handles:
            h.remove()
        return {"first_nonfinite": self.first_nonfinite, "steps": self.steps}


class ActivationProbe(_HookProbe):
    name = "activations"

    def start(self) -> None:
        for name, module in _module_names(self.rec):
            self.handles.append(module.register_forward_hook(self._hook(name)))

    def _hook(self, name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, output: Any) -> None:
            stats = tensor_stats(_tensors(output))
            if stats is None:
                return
            step = self.rec.step
            seen = self.steps.setdefault(step, {})
            if name not in seen:
                seen[name] = stats
            if stats["nonfinite"] and self.first_nonfinite is None:
                self.first_nonfinite = {"step": step, "module": name}

        return hook


class GradProbe(_HookProbe):
    name = "grads"

    def start(self) -> None:
        several = len(self.rec.models) > 1
        for key, model in self.rec.models.items():
            for pname, param in model.named_parameters():
                if param.requires_grad:
                    full = f"{key}.{pname}" if several else pname
                    self.handles.append(param.register_post_accumulate_grad_hook(self._hook(full)))

    def _hook(self, name: str) -> Callable[[Any], None]:
        def hook(param: Any) -> None:
            norm = float(param.grad.detach().float().norm())
            self.steps.setdefault(self.rec.step, {})[name] = norm
            if not math.isfinite(norm) and self.first_nonfinite is None:
                self.first_nonfinite = {"step": self.rec.step, "parameter": name}

        return hook


class WatchProbe:
    name = "watch"

    def __init__(self, rec: "Recorder"):
        if not rec.models or not rec.optimizers:
            raise InputError("--probe watch: the recording has no model and optimizer to watch")
        self.rec = rec
        self.watcher: Any = None
        self.loss: dict[int, float] = {}

    def start(self) -> None:
        from labcoat.watch.watcher import watch

        model = next(iter(self.rec.models.values()))
        optimizer = next(iter(self.rec.optimizers.values()))
        self.watcher = watch(model, optimizer, ledger=False, every=1, judge_every=1)
        self.watcher.start()

    def on_log(self, step: int, values: dict[str, Any]) -> None:
        loss = values.get("loss")
        if isinstance(loss, (int, float)) and not isinstance(loss, bool):
            self.loss[step] = float(loss)

    def on_step_end(self, step: int) -> None:
        self.watcher.observe(step, loss=self.loss.get(step))

    def finish(self) -> dict[str, Any]:
        self.watcher.close()
        return {"alerts": [a.to_event() for a in self.watcher.alerts]}


class ParamsProbe:
    """After every step, :func:`~labcoat.replay.checkpoint.fingerprint` of each replicated
    parameter (tensor-parallel and DTensor shards left out, as the watch's desync does)."""

    name = "params"

    def __init__(self, rec: "Recorder"):
        self.rec = rec
        self.tensors: dict[str, Any] = {}
        self.steps: dict[int, dict[str, int]] = {}

    def start(self) -> None:
        from labcoat.watch._resolve import select_replicated

        several = len(self.rec.models) > 1
        for key, model in self.rec.models.items():
            if hasattr(model, "named_parameters"):
                for name, t in select_replicated(model, None).items():
                    self.tensors[f"{key}.{name}" if several else name] = t

    def on_step_end(self, step: int) -> None:
        from labcoat.replay.fingerprint import fingerprint

        self.steps[step] = {name: fingerprint(t) for name, t in self.tensors.items()}

    def finish(self) -> dict[str, Any]:
        return {"steps": self.steps}


_KINDS = {
    "activations": ActivationProbe,
    "grads": GradProbe,
    "watch": WatchProbe,
    "params": ParamsProbe,
}


def make_probes(names: list[str], rec: "Recorder") -> list[Any]:
    return [_KINDS[n](rec) for n in check_probes(names)]
