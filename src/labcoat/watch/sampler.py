"""The watch's eyes: hooks that only read, turning a training loop into :class:`Sample` objects.

The sampler hooks the optimizer's step (pre and post) and, when ranks are compared, the
model's forward. On a sampled step the pre-step hook computes gradient norms on the device with
one fused kernel, and keeps a strided sample of each trained tensor so the post-step hook can
estimate the update/weight ratio; :meth:`Sampler.collect` moves everything pending to the host
in one transfer.

Parameter norms cost a read of every weight, as much as the gradient norms again, and on a
small CPU step that is several percent. They answer two questions: did a parameter stop
moving (``stale``) and did one go NaN (``nonfinite``). The first is answered by each tensor's
in-place version counter, which costs nothing: a parameter the optimizer wrote has moved. So
on a sampled step only the parameters that have a gradient but whose counter did not move are
read (an optimizer that writes through ``.data`` or a fused kernel leaves counters alone, and
then all of them are). Every parameter is read at the first sample, and at once whenever a
gradient is non-finite, so the parameter where a NaN started is still named before the update
spreads it. A full read also backs this up now and then, for a NaN that touches no loss and no
gradient (a parameter the forward pass never uses): once :data:`ALL_PARAMS_EVERY` samples and
:data:`ALL_PARAMS_STEPS` ``observe()`` calls have passed since the last one. Counting calls too
keeps that backstop's cost per step the same at ``every=1`` as at the default, where it is a
read of every weight every 100 steps; ten times as often would cost ``every=1`` half a percent
of a small step for the rarest case it covers. On an accelerator, telling whether a gradient
is finite would wait for the device, so there every sample reads every parameter.

A sampled ``observe()`` that no optimizer step preceded (gradient accumulation: with k=4 and
``every=10`` none ever is) hands the reads on to the next step that runs, and the
``observe()`` after that step is sampled too, so the gradient checks see every run.

Between sampled steps the hooks only count and keep a detached reference to each loss (and a
batch fingerprint), so every loss is still seen.
Nothing the model or optimizer computes is changed; :meth:`Sampler.remove` undoes every hook.
"""

from __future__ import annotations

import math
import time
from typing import Any, Hashable, Mapping

import torch
from torch import nn

from labcoat.modes import mode_dependent
from labcoat.optim import lr_value
from labcoat.watch.batches import Fingerprint, fingerprint
from labcoat.watch.distributed import RankInfo, StepClock, Synchronizer
from labcoat.watch.probes import norms, stack_scalars, to_host
from labcoat.watch.sample import FrozenReason, Sample, WatchContext

#: elements of each trained tensor kept to estimate the update/weight ratio
UPDATE_SAMPLE = 1024
#: every parameter's norm is read once this many samples and :data:`ALL_PARAMS_STEPS`
#: observe() calls have passed since the last full read (see the module docstring)
ALL_PARAMS_EVERY = 10
ALL_PARAMS_STEPS = 100


class Sampler:
    """Hooks -> samples for one model and optimizer (see the module docstring)."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        frozen: Mapping[str, torch.Tensor],
        every: int,
        sync_every: int,
        info: RankInfo,
    ):
        self.model, self.optimizer, self.info = model, optimizer, info
        self.every, self.sync_every = every, sync_every
        named = list(model.named_parameters())
        self.names = tuple(n for n, _ in named)
        self.params = [p for _, p in named]
        name_of = {id(p): n for n, p in named}
        group_params = tuple(
            tuple(
                name_of.get(id(p), f"param_groups[{g}][{i}]") for i, p in enumerate(grp["params"])
            )
            for g, grp in enumerate(optimizer.param_groups)
        )
        reasons: dict[str, FrozenReason] = {
            n: "requires_grad=False" for n, p in named if not p.requires_grad
        }
        reasons.update({n: "declared" for n in frozen})
        by_name = dict(named)
        self.frozen_tensors = {n: frozen.get(n, by_name.get(n)) for n in reasons}
        # frozen by the flag alone: leaves the frozen set once the flag is set again (see collect)
        self._flag_frozen = [(n, by_name[n]) for n, why in reasons.items() if why != "declared"]
        baseline = to_host([norms(list(self.frozen_tensors.values()))])[0] if reasons else []
        self.context = WatchContext(
            param_names=self.names,
            frozen=reasons,
            group_params=group_params,
            frozen_baseline=dict(zip(self.frozen_tensors, baseline)),
            rank=info.rank,
            world_size=info.world_size,
            every=every,
            mode_dependent=mode_dependent(model),
        )
        self.needs: frozenset[str] = frozenset()
        self.evaluating = False
        self.observed = 0
        self.samples = 0
        self.applied = 0  # optimizer steps applied since the watch started
        self._applied_at_observe = 0
        self._applied_since_measure = 0
        self._since_step = 0  # observe() calls since the last applied step
        self._gaps: list[int] = []
        self._observes = 0
        self._versions_read: list[int] | None = None  # parameter versions at the last read
        # the sample and the observe() call that last read every parameter
        self._all_params_at: tuple[int, int] | None = None
        self._sample_next = True
        # a sampled observe() that no optimizer step preceded (gradient accumulation) leaves
        # the tensor reads to the next step that runs, sampled at the observe() after it
        self._carry = False
        self._carried = False
        self._handles: list[Any] = []
        self._members_signature: tuple | None = None
        self._members_cached: frozenset[str] = frozenset()
        self.clock: StepClock | None = None
        self.sync: Synchronizer | None = None
        self._reset_pending()

    def attach(self, needs: frozenset[str], replicated: Mapping[str, torch.Tensor] | None) -> None:
        """Install the hooks, measuring what ``needs`` names; with ``replicated`` tensors, time
        each step and compare ranks every ``sync_every`` observes."""
        self.needs = needs
        self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
        self._handles.append(self.optimizer.register_step_post_hook(self._after_step))
        if replicated is not None:
            self.sync = Synchronizer(list(replicated), list(replicated.values()), self.info)
            self.clock = StepClock()
            self._handles.append(self.model.register_forward_pre_hook(self._forward_start))
            self._handles.append(self.model.register_forward_hook(self._forward_end))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    # -- hooks (they only read) ------------------------------------------------------------
    def _before_step(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        if self.clock is not None:
            self.clock.step_start()
        if "train_modes" in self.needs:
            self._pending_modes.append(self.model.training)
        if not self._sample_next:
            return
        if self._carry:
            self._carry, self._carried = False, True
        # everything read below is detached first, so no autograd graph is recorded
        # torch passes step()'s own arguments, the optimizer first: the closure is the second
        closure = args[1] if len(args) > 1 else kwargs.get("closure")
        if "grad_norms" in self.needs and closure is not None:
            # the closure computes this step's gradients inside step(): read them after
            self._grads_after_step = True
            self._measure(params="param_norms" in self.needs, grads=False)
        else:
            self._measure("param_norms" in self.needs, "grad_norms" in self.needs)
        if self._flag_frozen and "frozen_norms" in self.needs:
            # the counters _measure just read, when it read them (it does not for every setup)
            self._versions_at_step = self._pending_versions or [p._version for p in self.params]
        if "update_ratio" in self.needs:
            self._update_before = self._update_views()
            self._update_copy = torch._foreach_mul(self._update_before[1], 1.0)
        lrs, base_lrs = [], []  # a scheduler keeps each group's base rate as initial_lr
        for group in optimizer.param_groups:
            lrs.append(lr_value(group.get("lr")))
            base_lrs.append(lr_value(group.get("initial_lr")))
        self._pending_lrs, self._pending_base_lrs = lrs, base_lrs

    def _after_step(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        self.applied += 1
        self._applied_since_measure += 1
        if self.clock is not None:
            self.clock.step_end()
        if not self._sample_next:
            return
        if self._grads_after_step:
            self._grads_after_step = False
            self._measure(params=False, grads=True)
        if self._versions_at_step is not None:
            self._pending_frozen_stepped = self._frozen_written(self._versions_at_step)
            self._versions_at_step = None
        if self._update_before is not None and self._update_copy is not None:
            scales, views = self._update_before
            now = self._update_views()[1]
            if len(now) == len(views):
                deltas = torch._foreach_sub(now, self._update_copy)
                self._pending_update = (scales, norms([*deltas, *self._update_copy]))
            self._update_before = self._update_copy = None

    def _forward_start(self, module: nn.Module, args: Any) -> None:
        if self.clock is not None and not self.evaluating:
            self.clock.forward_start()

    def _forward_end(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.clock is not None and not self.evaluating:
            self.clock.forward_end()

    def _measure(self, params: bool, grads: bool, stepping: bool = True) -> None:
        """Gradient norms, then the parameter norms this step needs (see the module docstring).
        ``stepping``: the optimizer is about to step (False: an observe() with no step)."""
        params_now = self.params
        if grads:
            found = [p.grad for p in params_now]
            if any(g is None for g in found):  # (`None in found` would compare tensors)
                names = [n for n, g in zip(self.names, found) if g is not None]
                self._pending_grad_disabled = tuple(
                    n
                    for n, p, g in zip(self.names, params_now, found)
                    if g is None and not p.requires_grad
                )
                found = [g for g in found if g is not None]
                self._pending_grad_names = tuple(names)
            else:
                self._pending_grad_names = self.names
                self._pending_grad_disabled = ()
            self._pending_grads = norms(found)
        if not params:
            return
        versions = [p._version for p in params_now]
        self._pending_versions = versions
        self._pending_members = self._members()
        self._pending_applied = self._applied_since_measure
        self._applied_since_measure = 0
        before = self._versions_read
        if stepping:  # counters are compared from one optimizer step to the next
            self._versions_read = versions
        last = self._all_params_at
        due = (
            last is None
            or self.samples - last[0] >= ALL_PARAMS_EVERY
            and self.observed - last[1] >= ALL_PARAMS_STEPS
        )
        if due or (stepping and (before is None or not (grads and _finite(self._pending_grads)))):
            self._all_params_at = (self.samples, self.observed)
            self._pending_param_names = self.names
            self._pending_params = norms(params_now)
            return
        if stepping and versions != before:  # a gradient, and a counter the step did not move
            picked = [
                i
                for i, (v, b, p) in enumerate(zip(versions, before, params_now))
                if v == b and p.grad is not None
            ]
        elif stepping:  # no counter moved (an optimizer that writes through .data)
            picked = [i for i, p in enumerate(params_now) if p.grad is not None]
        else:  # no step is about to run: the next stepping read compares what changed
            picked = []
        self._pending_param_names = tuple([self.names[i] for i in picked])
        self._pending_params = norms([params_now[i] for i in picked])

    def _frozen_written(self, before: list[int]) -> frozenset[str]:
        """The parameters frozen by ``requires_grad=False`` whose version counter the optimizer
        step moved; all of them if it moved none at all (an optimizer that writes through
        ``.data`` leaves counters alone, and then the step cannot be told apart)."""
        written = {n for n, p, v in zip(self.names, self.params, before) if p._version != v}
        flagged = frozenset(n for n, _ in self._flag_frozen)
        return flagged & written if written else flagged

    def _members(self) -> frozenset[str]:
        """Names of the model's parameters in the optimizer's groups now (recomputed only when
        a group's list of parameters is replaced, added or resized)."""
        groups = self.optimizer.param_groups
        signature = tuple((id(g["params"]), len(g["params"])) for g in groups)
        if signature != self._members_signature:
            index = {id(p): n for n, p in zip(self.names, self.params)}
            self._members_cached = frozenset(
                index[id(p)] for g in groups for p in g["params"] if id(p) in index
            )
            self._members_signature = signature
        return self._members_cached

    def _update_views(self) -> tuple[list[float], list[torch.Tensor]]:
        """A strided view of each trained contiguous parameter, and how many elements each
        sampled element stands for."""
        scales, views = [], []
        for p in self.params:
            if p.requires_grad and p.is_contiguous() and p.numel() and not p.is_sparse:
                stride = max(1, -(-p.numel() // UPDATE_SAMPLE))
                view = p.detach().view(-1)[::stride]
                views.append(view)
                scales.append(p.numel() / view.numel())
        return scales, views

    def _reset_pending(self) -> None:
        self._pending_losses: list[tuple[int, Any]] = []
        self._pending_batches: list[tuple[int, int, Fingerprint]] = []
        self._pending_modes: list[bool] = []
        self._pending_params: torch.Tensor | list[float] | None = None
        self._pending_versions: list[int] | None = None
        self._pending_members: frozenset[str] | None = None
        self._pending_param_names: tuple[str, ...] = ()
        self._pending_applied = 0
        self._pending_grads: torch.Tensor | list[float] | None = None
        self._pending_grad_names: tuple[str, ...] = ()
        self._pending_grad_disabled: tuple[str, ...] = ()
        self._pending_lrs: list[float | None] | None = None
        self._pending_base_lrs: list[float | None] | None = None
        self._pending_update: tuple[list[float], torch.Tensor | list[float]] | None = None
        self._update_before: tuple[list[float], list[torch.Tensor]] | None = None
        self._update_copy: list[torch.Tensor] | None = None
        self._grads_after_step = False
        self._versions_at_step: list[int] | None = None
        self._pending_frozen_stepped: frozenset[str] | None = None

    # -- the user's side -------------------------------------------------------------------
    def add_loss(self, step: int, loss: torch.Tensor | float) -> None:
        self._pending_losses.append((step, loss))

    def add_batch(self, step: int, batch: Any) -> None:
        self._pending_batches.append((self.observed, step, fingerprint(batch)))

    def tick(self) -> tuple[bool, bool]:
        """Count one observe() call; returns (sample tensors now, compare ranks now)."""
        index = self.observed
        self.observed += 1
        self._observes += 1
        self._since_step += 1
        if self.applied != self._applied_at_observe:
            self._applied_at_observe = self.applied
            self._gaps.append(self._since_step)
            self._since_step = 0
        if self.clock is not None:
            self.clock.lap()
        sampled = index % self.every == 0 or self._carried
        self._carried = False
        synced = self.sync is not None and index % self.sync_every == 0
        return sampled, synced

    def collect(self, step: int, sampled: bool, synced: bool) -> Sample:
        """Everything pending as one :class:`Sample`, moved to the host in one transfer."""
        if sampled and "grad_norms" in self.needs and self._pending_grads is None:
            self._carry = True  # no step ran since the last sample: read at the next one
        if sampled and "param_norms" in self.needs and self._pending_params is None:
            self._measure(params=True, grads=False, stepping=False)  # skipped or accumulating
        # what is on the host already (CPU reads, as lists) is kept; the rest moves at once
        host: dict[str, Any] = {}
        vectors: dict[str, torch.Tensor] = {}
        if self._pending_losses:
            losses = [v for _, v in self._pending_losses]
            if any(isinstance(v, torch.Tensor) for v in losses):
                vectors["losses"] = stack_scalars(losses)
            else:
                host["losses"] = losses
        if sampled:
            pending = {
                "params": self._pending_params,
                "grads": self._pending_grads,
                "update": None if self._pending_update is None else self._pending_update[1],
            }
            if "frozen_norms" in self.needs and self.context.frozen:
                self._drop_unfrozen()
                pending["frozen"] = norms(list(self.frozen_tensors.values()))
            for key, value in pending.items():
                if isinstance(value, list):
                    host[key] = value
                elif value is not None:
                    vectors[key] = value
        if self._pending_batches:
            device_digests = [t for _, _, fp in self._pending_batches for t in fp.device]
            if device_digests:
                vectors["batches"] = torch.cat(device_digests)
        if vectors:
            host.update(zip(vectors, to_host(list(vectors.values()))))
        cross = None
        if synced and self.sync is not None and self.clock is not None:
            cross = self.sync.gather(self.clock.take_median())
        grads = host.get("grads")
        params = host.get("params")
        if params is not None:
            applied = self._pending_applied
        elif sampled:
            applied, self._applied_since_measure = self._applied_since_measure, 0
        else:
            applied = 0
        sample = Sample(
            step=step,
            time=time.time(),
            losses=[(s, v) for (s, _), v in zip(self._pending_losses, host.get("losses", []))],
            applied_steps=applied,
            lrs=self._pending_lrs if sampled else None,
            base_lrs=self._pending_base_lrs if sampled else None,
            grad_norms=dict(zip(self._pending_grad_names, grads)) if grads is not None else None,
            grad_disabled=self._pending_grad_disabled if grads is not None else (),
            param_norms=(
                dict(zip(self._pending_param_names, params)) if params is not None else None
            ),
            param_versions=(
                dict(zip(self.names, self._pending_versions or ())) if params is not None else None
            ),
            optimizer_params=self._pending_members if params is not None else None,
            frozen_norms=(
                dict(zip(self.frozen_tensors, host["frozen"])) if "frozen" in host else None
            ),
            frozen_stepped=self._pending_frozen_stepped,
            cross_rank=cross,
            update_ratio=_update_ratio(self._pending_update, host.get("update")),
            observes=self._observes,
            unapplied=self._since_step,
            step_gaps=tuple(self._gaps),
            batches=(
                _batch_keys(self._pending_batches, host.get("batches", []))
                if self._pending_batches
                else ()
            ),
            train_modes=tuple(self._pending_modes),
        )
        self._reset_pending()
        self._observes = 0
        self._gaps = []
        if sampled:
            self.samples += 1
        return sample

    def _drop_unfrozen(self) -> None:
        """A parameter frozen only by ``requires_grad=False`` whose flag the user set back to
        True was unfrozen on purpose (fine-tuning that thaws a backbone): from then on it trains
        and is no longer expected to stay put. Declared tensors stay frozen whatever the flag."""
        thawed = [n for n, p in self._flag_frozen if p.requires_grad]
        if thawed:
            for name in thawed:
                self.frozen_tensors.pop(name, None)
            self._flag_frozen = [(n, p) for n, p in self._flag_frozen if n not in thawed]

    def plan_next(self) -> None:
        """Decide whether the hooks measure during the coming optimizer step."""
        self._sample_next = self.observed % self.every == 0 or self._carry

    # -- resuming --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "observed": self.observed,
            "samples": self.samples,
            "applied": self.applied,
            "since_step": self._since_step,
            "param_names": list(self.names),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.observed = int(state["observed"])
        self.samples = int(state["samples"])
        self.applied = self._applied_at_observe = int(state["applied"])
        self._since_step = int(state["since_step"])
        self.plan_next()


def _finite(found: torch.Tensor | list[float] | None) -> bool:
    """Whether gradient norms are known to be finite without waiting for an accelerator (norms
    are >= 0, so a finite sum means every one is finite)."""
    if isinstance(found, list):
        return math.isfinite(sum(found))
    if isinstance(found, torch.Tensor) and found.device.type == "cpu":
        return bool(torch.isfinite(found.sum()))
    return False


def _update_ratio(
    pending: tuple[list[float], Any] | None, norms: list[float] | None
) -> float | None:
    if pending is None or not norms:
        return None
    scales = pending[0]
    n = len(scales)
    update = sum(s * d * d for s, d in zip(scales, norms[:n]))
    weight = sum(s * w * w for s, w in zip(scales, norms[n:]))
    if not (math.isfinite(update) and math.isfinite(weight)) or weight <= 0:
        return math.nan if not math.isfinite(update + weight) else None
    return math.sqrt(update / weight)


def _batch_keys(
    pending: list[tuple[int, int, Fingerprint]], device_values: list[float]
) -> tuple[tuple[int, int, Hashable], ...]:
    out = []
    at = 0
    for index, step, fp in pending:
        n = 2 * len(fp.device)
        out.append((index, step, fp.key(device_values[at : at + n])))
        at += n
    return tuple(out)
