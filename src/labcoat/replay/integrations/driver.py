"""A trainer's steps as one loop of the recorder, driven by the trainer's hooks.

A hand loop's ``rec.loop`` finishes a step and may checkpoint when it fetches the next item. A
trainer fetches ahead (Lightning prefetches a batch, Hugging Face a gradient-accumulation's
worth), so the boundary between two steps is the hook that starts a step instead: the step
before it has finished (optimizer, scheduler, logging) and the RNGs are what the step will use.
:meth:`StepDriver.step_start` is that boundary: it finishes the previous step, checkpoints when
due, and on replay restores the checkpoint when the trainer has resumed to its step (or ends
the window).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labcoat.errors import InputError
from labcoat.replay.loops import Frame

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder


class StepDriver:
    """The open loop ``name`` of ``rec`` whose items are a trainer's steps."""

    def __init__(self, rec: "Recorder", name: str):
        self.rec = rec
        self.frame = Frame(name, len(rec.frames), None)
        self.started = False
        self.ended = False

    def start(self) -> None:
        rec = self.rec
        if rec.frames:
            rec.frames[-1].had_child = True
        rec.check_loop(self.frame)
        rec.frames.append(self.frame)
        self.started = True

    def step_start(self, index: int) -> None:
        """The trainer starts its step ``index`` (its own count of steps done)."""
        rec, frame = self.rec, self.frame
        if not rec.recording and not rec.arrived:
            want = int(rec._state["step"])
            if index != want:  # an InputError: the replay reports it as its error
                raise InputError(
                    f"run {rec.run_id}: the trainer resumed at step {index}, but checkpoint "
                    f"{want} is at step {want}; did the trainer's settings (batch size, "
                    "accumulation, max steps) change?"
                )
            rec.arrive(frame)
        elif rec.recording and not frame.index:
            rec.step = index  # a run resumed from the user's own checkpoint counts on from it
        rec.boundary(frame)  # finishes the step before; checkpoints; ends a replay's window
        frame.index += 1
        frame.open = True
        frame.had_child = False

    def end(self, *, failed: bool = False) -> None:
        if not self.started or self.ended:
            return
        self.ended = True
        self.rec.finish_iteration(self.frame, abandoned=failed)
        if self.frame in self.rec.frames:
            self.rec.frames.remove(self.frame)


def stopped(exc: BaseException | None) -> bool:
    """Whether ``exc`` ends the training without failing it: the end of a replay's window
    (``ReplayStop``, a ``SystemExit(0)``) or none."""
    return exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None))


def register(group: dict[str, Any], obj: Any, name: str) -> None:
    """Add ``obj`` to one of the recorder's groups (for the probes) unless it is there."""
    if obj is None or any(o is obj for o in group.values()):
        return
    key, i = name, 1
    while key in group:
        key, i = f"{name}.{i}", i + 1
    group[key] = obj


def rng_entry(loader: Any) -> dict[str, Any]:
    """The RNG states an epoch's data order is drawn from: the global ones and the loader's."""
    from labcoat.replay import rng

    return {
        "global": rng.capture_global(),
        "loader": {role: g.get_state() for role, g in rng.loader_generators(loader).items()},
    }


def restore_entry(state: dict[str, Any], loader: Any) -> None:
    from labcoat.replay import rng

    rng.restore_global(state["global"])
    gens = rng.loader_generators(loader)
    for role, value in state["loader"].items():
        if role in gens:
            gens[role].set_state(value)


class Objects:
    """What a trainer built (its module, optimizers, schedulers, scaler): their state dicts and
    the gradients not applied yet, for a checkpoint. What the user passed to ``labcoat.replayable``
    is the recorder's own and left out."""

    GROUPS = ("models", "optimizers", "schedulers", "scalers")

    def __init__(self, rec: "Recorder"):
        self.rec = rec
        self.groups: dict[str, dict[str, Any]] = {g: {} for g in self.GROUPS}

    def add(self, group: str, obj: Any, name: str) -> None:
        if obj is None or not callable(getattr(obj, "state_dict", None)):
            return
        if any(o is obj for o in getattr(self.rec, group).values()):
            return
        register(self.groups[group], obj, name)

    def state_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            g: {k: o.state_dict() for k, o in objs.items()} for g, objs in self.groups.items()
        }
        out["grads"] = {
            k: {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
            for k, m in self.groups["models"].items()
            if hasattr(m, "named_parameters")
        }
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for group in self.GROUPS:
            for key, obj in self.groups[group].items():
                if key in state[group]:
                    obj.load_state_dict(state[group][key])
                register(getattr(self.rec, group), obj, key)  # the probes see them
        for key, model in self.groups["models"].items():
            grads = state["grads"].get(key) or {}
            for pname, param in model.named_parameters():
                grad = grads.get(pname)
                param.grad = None if grad is None else grad.to(param.device, param.dtype)
