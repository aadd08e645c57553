"""``labcoat.diagnose``: run the check ladder on copies of a PyTorch setup."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field, fields
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

from labcoat._validation import (
    BOOL,
    InstanceOf,
    IsCallable,
    OneOf,
    Seed,
    renamed,
    validate_params,
    warn_deprecated,
)
from labcoat.doctor import checks as _checks  # noqa: F401 - registers the checks
from labcoat.doctor.arguments import check_objects
from labcoat.doctor.case import TASKS, Case
from labcoat.doctor.copies import Blueprint, OptimizerLike, UserState
from labcoat.doctor.cpu import one_thread
from labcoat.doctor.inputs import Examples, split_off, to_examples
from labcoat.doctor.ladder import run_ladder
from labcoat.doctor.progress import ControlProgress
from labcoat.doctor.registry import LAYERS
from labcoat.doctor.result import Diagnosis
from labcoat.doctor.selftest import run_selftest
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.params import as_names

#: how much training the controls may spend (was ``budget``, a word evals' items and FLOPs use)
EFFORTS = ("fast", "full")
#: examples materialised from the user's data, per effort
EXAMPLE_LIMIT = {"fast": 4096, "full": 16384}
VAL_FRACTION = 0.2


def _objects(arguments: Mapping[str, Any]) -> None:
    """The user's objects checked together first: a class for an instance, arguments out of
    order, the meta device (:func:`labcoat.doctor.arguments.check_objects`)."""
    names = ("model", "data", "loss_fn", "optimizer", "val_data", "step", "metric", "on_finding")
    check_objects(**{name: arguments[name] for name in names})


@renamed(budget="effort")
@validate_params(
    {
        "loss_fn": IsCallable("a callable(output, target) -> loss tensor"),
        "step": IsCallable(none=True),
        "metric": IsCallable(none=True),
        "task": OneOf(TASKS, none=True),
        "effort": OneOf(EFFORTS),
        "seed": (Seed(), "numpy and scikit-learn refuse negative seeds."),
        "run_all": BOOL,
        "on_finding": IsCallable(none=True),
        "progress": InstanceOf((bool,), none=True),
    },
    first=_objects,
)
def diagnose(
    model: nn.Module,
    data: Any,
    loss_fn: Callable[[Any, Any], torch.Tensor],
    optimizer: OptimizerLike,
    *,
    val_data: Any = None,
    step: Callable | None = None,
    metric: Callable[[Any, Any], float] | None = None,
    task: str | None = None,
    expect_frozen: Iterable[str] | str = (),
    expect_leaky: Iterable[int] | int = (),
    groups: Any = None,
    val_groups: Any = None,
    seed: int = 0,
    effort: str = "fast",
    ledger: Any = None,
    run_all: bool = False,
    layers: Iterable[str] | None = None,
    on_finding: Callable[[Finding], None] | None = None,
    progress: bool | None = None,
) -> Diagnosis:
    """Falsify whole categories of training bugs, layer by layer, on copies of your setup.

    Layers run in order (data, model, update, then the controls) and stop at the first layer
    with a failing check unless ``run_all``. Your model and optimizer are left bit-identical.
    ``ledger``: a :class:`labcoat.Ledger` or path to record findings in; ``None`` records in the
    default ledger only if one already exists; ``False`` records nowhere. ``progress``: show
    progress bars while the controls train (``None``: only when stdout is a terminal).
    ``expect_frozen``: glob patterns of parameters meant to stay fixed; ``expect_leaky``: input
    features (column indices) that may predict the label on their own without being a leak.
    ``groups``: a group id (patient, document, source) per row of ``data``, and ``val_groups``
    per row of ``val_data``: no group may be on both sides; labcoat's own split keeps each whole.

    Every run also proves its gradient and update checks on mutants of your setup (see
    :mod:`labcoat.doctor.selftest`); ``report.extras["selftest"]`` holds the result.
    """
    _validate_groups(groups, val_groups, val_data)
    patterns = as_names(
        model if isinstance(model, nn.Module) else None, expect_frozen, "expect_frozen"
    )
    leaky = _feature_indices(expect_leaky)
    chosen = LAYERS if layers is None else (layers,) if isinstance(layers, str) else tuple(layers)
    unknown = [layer for layer in chosen if layer not in LAYERS]
    if unknown:
        raise InputError(f"layers: unknown layer(s) {unknown}; choose from {list(LAYERS)}")

    from labcoat.doctor.inputs import with_groups
    from labcoat.ledger import Ledger

    notebook = Ledger.for_recording(ledger)
    user_state = UserState(model, optimizer) if isinstance(model, nn.Module) else None
    devices = (
        [torch.cuda.current_device()]
        if torch.cuda.is_available() and torch.cuda.is_initialized()
        else []
    )
    # the caller's RNG streams stay where they were; copies train on one thread (see doctor.cpu)
    with torch.random.fork_rng(devices=devices), one_thread():
        torch.manual_seed(seed)
        blueprint = Blueprint(model, optimizer)
        examples = to_examples(data, name="data", limit=EXAMPLE_LIMIT[effort])
        examples = with_groups(examples, groups, data, "groups")
        if val_data is None:
            train, val = split_off(examples, VAL_FRACTION, seed)
        else:
            val = to_examples(val_data, name="val_data", limit=EXAMPLE_LIMIT[effort])
            train, val = examples, with_groups(val, val_groups, val_data, "val_groups")
        _check_task_fits(task, train)
        if (
            train.fields is not None
        ):  # dict batches: the copies unpack them as the model's forward asks
            train.fields.adapt(blueprint.model)
        case = Case(
            blueprint=blueprint,
            train=train,
            val=val,
            loss_fn=loss_fn,
            step=step,
            metric=metric,
            task=task,
            expect_frozen=patterns,
            expect_leaky=leaky,
            seed=seed,
            effort=effort,
            user_state=user_state,
            callers=(model, optimizer if isinstance(optimizer, torch.optim.Optimizer) else None),
            val_given=val_data is not None,
            read=examples,
            loader=data if isinstance(data, torch.utils.data.DataLoader) else None,
            progress=ControlProgress.resolve(progress),
        )
        case.refuse_structured_output()
        findings, ran, not_run, timings = run_ladder(
            case, layers=chosen, run_all=run_all, on_finding=on_finding
        )
        selftest = run_selftest(case, findings)
        if user_state is not None and user_state.changed():  # last line of defence
            user_state.restore()
        inferred = _task_or_none(case)
    report = Diagnosis(
        findings=findings,
        layers_run=ran,
        layers_not_run=not_run,
        task=inferred,
        seed=seed,
        effort=effort,
        timings=timings,
        examples={"train": len(train), "val": len(val)},
        extras={"selftest": selftest.to_dict(), "notes": [selftest.note()]},
    )
    if notebook is not None:  # each check becomes a resolved hypothesis with its evidence
        ids = report.record(notebook)
        report.extras["ledger"] = {"location": notebook.location, "findings": ids}
    return report


def _feature_indices(expect_leaky: Iterable[int] | int) -> tuple[int, ...]:
    """``expect_leaky``: features (columns of the flattened input) that may predict the label
    on their own, so that the leak check does not fail on them."""
    if isinstance(expect_leaky, int):
        values: tuple = (expect_leaky,)
    else:
        values = (
            tuple(expect_leaky)
            if isinstance(expect_leaky, Iterable) and not isinstance(expect_leaky, str)
            else (expect_leaky,)
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise InputError(
            "expect_leaky: expected feature indices (non-negative ints, columns of the flattened "
            f"input) that may predict the label alone; got {values!r}"
        )
    return values


def _validate_groups(groups: Any, val_groups: Any, val_data: Any) -> None:
    """Groups come for every side the doctor compares, or not at all."""
    if val_groups is not None and val_data is None:
        raise InputError(
            "val_groups: given without val_data; pass val_data too, or only groups= and let "
            "labcoat split by group"
        )
    if val_data is not None and (groups is None) != (val_groups is None):
        given, missing = ("groups", "val_groups")
        if groups is None:
            given, missing = missing, given
        raise InputError(
            f"{given}: given without {missing}; with val_data, pass groups= (one id per row of "
            "data) and val_groups= (one per row of val_data) together"
        )


def _check_task_fits(task: str | None, train: Examples) -> None:
    """A declared task must fit the targets; otherwise every later check would misread them."""
    y = train.y
    integer = not torch.is_floating_point(y)
    if task == "sequence" and not (integer and y.ndim >= 2):
        raise InputError(
            f"task: 'sequence' needs (N, T) integer token targets; got {y.dtype} targets of shape "
            f"{tuple(y.shape)}; leave task=None to infer it"
        )
    if task == "classification" and not integer and not bool(((y == 0) | (y == 1)).all()):
        raise InputError(
            "task: 'classification' needs integer labels (or 0/1 floats, one logit each); got "
            f"{y.dtype} targets with other values; pass y.long() or leave task=None"
        )


def _task_or_none(case: Case) -> str | None:
    try:
        return case.inferred_task
    except Exception:  # noqa: BLE001 - the task is informational only
        return case.task


#: diagnose's parameters that say how to run, not what to run: every other parameter is a field
#: of :class:`Experiment` (a test holds the two to one list)
RUN_OPTIONS = ("run_all", "layers", "on_finding", "progress")


@dataclass
class Experiment:
    """A setup to diagnose, as a file for ``labcoat doctor FILE.py[:NAME]`` returns it.

    Its fields are :func:`diagnose`'s parameters less :data:`RUN_OPTIONS`, with the same
    defaults, plus a ``name``."""

    model: nn.Module
    data: Any
    loss_fn: Callable[[Any, Any], torch.Tensor]
    optimizer: OptimizerLike
    val_data: Any = None
    step: Callable | None = None
    metric: Callable[[Any, Any], float] | None = None
    task: str | None = None
    expect_frozen: Iterable[str] | str = ()
    expect_leaky: Iterable[int] | int = ()
    groups: Any = None
    val_groups: Any = None
    seed: int = 0
    effort: str = "fast"
    ledger: Any = None
    name: str = field(default="", compare=False)
    #: deprecated: ``effort`` (accepted for one release)
    budget: InitVar[str | None] = None

    def __post_init__(self, budget: str | None = None) -> None:
        if budget is not None:
            warn_deprecated("labcoat.Experiment(budget=...)", "labcoat.Experiment(effort=...)")
            self.effort = budget
        # a class for an instance, arguments out of order, tensors on the meta device: said
        # where the experiment is built, before anything runs
        check_objects(
            model=self.model,
            data=self.data,
            loss_fn=self.loss_fn,
            optimizer=self.optimizer,
            val_data=self.val_data,
            step=self.step,
            metric=self.metric,
        )

    def diagnose(self, **overrides: Any) -> Diagnosis:
        """Run :func:`diagnose` on this setup; keyword arguments override its fields."""
        kwargs = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}
        kwargs.update(overrides)
        return diagnose(**kwargs)

    def out_of_fold(self, **options: Any) -> Any:
        """Held-out class probabilities of every row, from ``folds`` copies of this setup each
        trained without its fold (:func:`labcoat.doctor.oof.out_of_fold`): what
        ``labcoat.audit.label_issues(setup=...)`` audits the labels with."""
        from labcoat.doctor.oof import out_of_fold

        return out_of_fold(self, **options)
