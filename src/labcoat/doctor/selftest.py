"""Self-test: the gradient and update checks must fail on the user's setup with its learning
removed.

A check is only trusted once it has been seen to fail. Every doctor run builds mutants of the
user's own setup (the loss multiplied by zero, the model's output detached from the graph),
runs the gradient and update checks that passed on the real setup against each mutant, and
counts the mutants caught. A mutant that passes is a failure of labcoat, not of the user's
setup, and the report says so.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch

from labcoat.doctor.case import MAX_CALLS_PER_UPDATE, Case
from labcoat.doctor.copies import Blueprint, has_nonzero_grad
from labcoat.doctor.ladder import run_check
from labcoat.doctor.progress import ControlProgress
from labcoat.doctor.registry import REGISTRY
from labcoat.findings import Finding

#: the checks a mutant must fail; each is proven only where it passed on the real setup
CHECKS: tuple[str, ...] = ("model.grad.coverage", "update.params.moved")


@dataclass(frozen=True)
class Mutant:
    """A way to remove the learning signal from a setup; a sound check must then fail.
    ``spared(mutated)``: why this setup still learns as mutated (the mutant proves nothing on
    it), or None."""

    name: str
    mutate: Callable[[Case], Case]
    spared: Callable[[Case], str | None] = lambda _mutated: None


def fork(case: Case, **changes: Any) -> Case:
    """A new case on the same data, with nothing cached and no link to the caller's objects."""
    return dataclasses.replace(
        case,
        user_state=None,
        progress=ControlProgress(False),
        _results={},
        _failed_probes={},
        _reported={},
        **changes,
    )


def loss_times_zero(case: Case) -> Case:
    loss_fn = case.loss_fn

    def zeroed(output: Any, target: Any) -> torch.Tensor:
        return loss_fn(output, target) * 0

    return fork(case, loss_fn=zeroed)


def step_trains_without_loss_fn(mutated: Case) -> str | None:
    """Why zeroing ``loss_fn`` removes no learning from this setup, or None: the user's step
    still gives every trainable parameter a non-zero gradient at ``optimizer.step()``, so terms
    it adds itself (distillation from a teacher, a regulariser on every weight) carry the
    learning. Measured here on one update of a fresh copy, apart from the checks it excuses."""
    if mutated.step is None:
        return None
    setup = mutated.blueprint.fresh()
    step = mutated.fresh_step(setup)
    trainable = [p for p in setup.model.parameters() if p.requires_grad]
    seen: list[bool] = []

    def at_step(*_: Any) -> None:
        if not seen:
            seen.append(all(has_nonzero_grad(p) for p in trainable))

    handle = setup.optimizer.register_step_pre_hook(at_step)
    setup.model.train()
    torch.manual_seed(mutated.seed)
    batch = mutated.on_device(mutated.probe_batch.batch())
    try:
        with warnings.catch_warnings():  # the copy's warnings (a scheduler's) are not the user's
            warnings.simplefilter("ignore")
            for _ in range(MAX_CALLS_PER_UPDATE):
                step(setup.model, batch, setup.optimizer, mutated.loss_fn)
                if seen:
                    break
    except Exception:  # noqa: BLE001 - a step that fails as mutated is for the checks to judge
        return None
    finally:
        handle.remove()
    if trainable and seen and seen[0]:
        return (
            "with loss_fn zeroed, your step still gives every trainable parameter a gradient "
            "(a loss term of its own, as in distillation)"
        )
    return None


def output_detached(case: Case) -> Case:
    blueprint = Blueprint(case.blueprint.model, case.blueprint.optimizer)
    blueprint.model.register_forward_hook(_detach)
    return fork(case, blueprint=blueprint)


def _detach(_module: torch.nn.Module, _args: Any, output: Any) -> Any:
    return detached(output)


def detached(output: Any) -> Any:
    """``output`` with every tensor in it detached: a tensor, or tuples, lists and dicts of them."""
    if isinstance(output, torch.Tensor):
        return output.detach()
    if isinstance(output, dict):
        items = {k: detached(v) for k, v in output.items()}
        try:
            return type(output)(**items)  # keeps dict subclasses built from fields (ModelOutput)
        except TypeError:
            return dict(items)
    if isinstance(output, tuple) and hasattr(output, "_fields"):  # a namedtuple
        return type(output)(*(detached(v) for v in output))
    if isinstance(output, (tuple, list)):
        return type(output)(detached(v) for v in output)
    return output


MUTANTS: list[Mutant] = [
    Mutant("loss × 0", loss_times_zero, step_trains_without_loss_fn),
    Mutant("output detached", output_detached),
]


@dataclass
class MutantResult:
    mutant: str
    statuses: dict[str, str]  # check id -> status on the mutant
    messages: dict[str, str] = field(default_factory=dict)
    #: why the mutant was not run: the setup still learns as mutated (then it is not counted)
    spared: str = ""

    @property
    def caught_by(self) -> list[str]:
        return [check for check, status in self.statuses.items() if status == "fail"]

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


@dataclass
class SelfTest:
    """Which mutants the proven checks caught; ``ok`` is None when the self-test could not run."""

    checks: list[str]
    results: list[MutantResult]
    reason: str = ""
    duration_s: float = 0.0

    @property
    def counted(self) -> list[MutantResult]:
        """The mutants that ran: those that remove the learning from this setup."""
        return [r for r in self.results if not r.spared]

    @property
    def ran(self) -> bool:
        return bool(self.counted)

    @property
    def caught(self) -> int:
        return sum(r.caught for r in self.counted)

    @property
    def ok(self) -> bool | None:
        return None if not self.ran else self.caught == len(self.counted)

    def note(self) -> str:
        spared = "".join(f"; {r.mutant} not run: {r.spared}" for r in self.results if r.spared)
        if not self.ran:
            reason = self.reason or "no mutant removes the learning from this setup"
            return f"self-test: not run ({reason}{spared})"
        names = ", ".join(r.mutant for r in self.counted)
        line = f"self-test: the checks caught {self.caught}/{len(self.counted)} mutants ({names})"
        line += spared
        missed = [r for r in self.counted if not r.caught]
        if missed:
            which = "; ".join(f"{r.mutant} passed {', '.join(r.statuses)}" for r in missed)
            line += (
                f" — LABCOAT FAILURE: {which}; do not trust its gradient and update verdicts on "
                "this setup"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "caught": self.caught,
            "mutants": len(self.counted),
            "checks": self.checks,
            "reason": self.reason,
            "duration_s": self.duration_s,
            "results": [
                {
                    "mutant": r.mutant,
                    "caught": r.caught,
                    "caught_by": r.caught_by,
                    "statuses": r.statuses,
                    "messages": r.messages,
                    "spared": r.spared,
                }
                for r in self.results
            ],
        }


def run_selftest(
    case: Case, findings: Iterable[Finding], mutants: Iterable[Mutant] | None = None
) -> SelfTest:
    """Prove the checks in :data:`CHECKS` that passed on the real setup against each mutant."""
    start = time.perf_counter()
    status = {f.check: f.status for f in findings}
    proven = [c for c in CHECKS if status.get(c) == "pass"]
    if not proven:
        ran = [c for c in CHECKS if c in status]
        reason = (
            f"{', '.join(ran)} did not pass on the setup itself"
            if ran
            else "the gradient and update checks did not run"
        )
        return SelfTest(proven, [], reason)
    results = []
    for mutant in MUTANTS if mutants is None else mutants:
        torch.manual_seed(case.seed)
        mutated = mutant.mutate(case)
        spared = mutant.spared(mutated)
        if spared:
            results.append(MutantResult(mutant.name, {}, spared=spared))
            continue
        found = [run_check(REGISTRY[c], mutated) for c in proven]
        results.append(
            MutantResult(
                mutant.name, {f.check: f.status for f in found}, {f.check: f.message for f in found}
            )
        )
    return SelfTest(proven, results, duration_s=time.perf_counter() - start)
