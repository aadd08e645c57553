"""The plan a hypothesis carries: the analysis decided before the results exist.

A :class:`Plan` names the metric and its column, the comparison (superiority, non-inferiority
with a margin, or equivalence within ±margin), the test, α and sidedness, the unit of analysis
(the item id column) and the cluster column, how many items and seeds per arm, the exclusions
decided in advance, the stopping rule and the family it belongs to. Its fields are declared
once in :data:`FIELDS` (default, constraint, meaning), so one loop validates a plan built in
Python, read from TOML or read back from the ledger, and writes the one-line error for a
missing, unknown or wrong field. A plan file is flat TOML::

    metric = "accuracy"
    column = "correct"
    id = "question_id"
    comparison = "superiority"
    items = 1200
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from labcoat._validation import COUNT, POSITIVE_INT, PROBABILITY, Constraint, Interval, OneOf
from labcoat.errors import InputError

COMPARISONS = ("superiority", "non-inferiority", "equivalence")
TESTS = ("auto", "paired", "mcnemar", "bootstrap", "sequential")
SIDES = ("one-sided", "two-sided")
STOPPING = ("fixed", "sequential")
CORRECTIONS = ("holm", "bh", "none")
CONTROLS = ("baseline", "negative-control", "none")
BETTER = ("higher", "lower")
#: metrics that are not a mean of per-item scores: their test is a paired bootstrap
BOOTSTRAP_METRICS = ("f1", "precision", "recall", "mcc")
#: metrics that are shares of items (a per-item score is 0/1 or a share): their scores must lie
#: in the plan's bounds whatever the test, and their variance is bounded without a pilot
SHARE_METRICS = frozenset(
    (
        "accuracy",
        "acc",
        "acc_norm",
        "exact_match",
        "em",
        "pass@1",
        "pass_rate",
        "win_rate",
        "error_rate",
    )
)

REQUIRED = object()


class _Text(Constraint):
    def __init__(self, none: bool = False):
        self.none = none

    def is_satisfied_by(self, value: Any) -> bool:
        return (self.none and value is None) or (isinstance(value, str) and bool(value.strip()))

    def __str__(self) -> str:
        return "non-empty text" + (" or absent" if self.none else "")


class _Many(Constraint):
    """A list of text or int labels (ids, seeds, changes), stored as a tuple of text."""

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in value
        )

    def convert(self, value: Any) -> tuple[str, ...]:
        return tuple(str(v) for v in value)

    def __str__(self) -> str:
        return "a list of text or integer labels"


class _Optional(Constraint):
    def __init__(self, inner: Constraint):
        self.inner = inner

    def is_satisfied_by(self, value: Any) -> bool:
        return value is None or self.inner.is_satisfied_by(value)

    def convert(self, value: Any) -> Any:
        return None if value is None else self.inner.convert(value)

    def __str__(self) -> str:
        return f"{self.inner} or absent"


_NONNEG = Interval(float, 0.0)
_POSITIVE = Interval(float, 0.0, low_open=True)

#: field -> (default or REQUIRED, constraint, what it means); the one declaration of a plan
FIELDS: dict[str, tuple[Any, Constraint, str]] = {
    "metric": (REQUIRED, _Text(), "the metric's name (accuracy, exact_match, f1, ...)"),
    "column": (REQUIRED, _Text(), "the per-item score column in the results files"),
    "id": (REQUIRED, _Text(), "the unit of analysis: the item id column in both files"),
    "comparison": (REQUIRED, OneOf(COMPARISONS), "superiority, non-inferiority or equivalence"),
    "items": (REQUIRED, POSITIVE_INT, "items per arm after the planned exclusions"),
    "margin": (0.0, _NONNEG, "the margin, in the metric's units"),
    "test": ("auto", OneOf(TESTS), "paired (CR1), mcnemar, bootstrap or sequential"),
    "alpha": (0.05, PROBABILITY, "significance threshold of the test"),
    "sides": ("one-sided", OneOf(SIDES), "one-sided or two-sided"),
    "better": ("higher", OneOf(BETTER), "whether a higher or lower metric is better"),
    "cluster": (None, _Text(none=True), "the cluster column (CR1 clustered SE)"),
    "seeds": (1, POSITIVE_INT, "seeds (answers) per item in each arm"),
    "seed_column": (None, _Text(none=True), "the column naming each row's seed"),
    "seeds_a": ((), _Many(), "the seeds arm A runs with"),
    "seeds_b": ((), _Many(), "the seeds arm B runs with"),
    "exclude": ((), _Many(), "item ids excluded in advance (e.g. an audit's flagged rows)"),
    "label": (None, _Text(none=True), "the label column (bootstrap of F1-like metrics)"),
    "stopping": ("fixed", OneOf(STOPPING), "fixed n, or sequential (anytime-valid)"),
    "looks": (1, POSITIVE_INT, "how many times the data may be looked at"),
    "bounds": ((0.0, 1.0), None, "the range every per-item score lies in (sequential)"),
    "family": (None, _Text(none=True), "the family of hypotheses this one belongs to"),
    "family_size": (1, POSITIVE_INT, "how many hypotheses the family holds"),
    "correction": ("holm", OneOf(CORRECTIONS), "holm, bh or none across the family"),
    "control": ("baseline", OneOf(CONTROLS), "what arm B is: baseline, negative-control, none"),
    "changes": ((), _Many(), "what differs between arm A and arm B (the interventions)"),
    "dataset_a": (None, _Text(none=True), "the item set arm A is evaluated on"),
    "dataset_b": (None, _Text(none=True), "the item set arm B is evaluated on"),
    "variance": (None, _Optional(_POSITIVE), "variance of a per-item difference (a pilot's)"),
    "design_effect": (1.0, Interval(float, 1.0), "variance inflation by clustering"),
    "effect": (None, _Optional(_POSITIVE), "the smallest effect worth detecting"),
    "power": (0.8, PROBABILITY, "power the design aims for"),
    "resamples": (2000, Interval(int, 100), "bootstrap resamples"),
    "seed": (0, COUNT, "random seed of the bootstrap"),
}


def _bounds(value: Any, name: str) -> tuple[float, float]:
    ok = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
        and value[0] < value[1]
    )
    if not ok:
        raise InputError(
            f"`{name}` must be two numbers [low, high] with low < high; got {value!r}."
        )
    return (float(value[0]), float(value[1]))


@dataclass(frozen=True)
class Plan:
    """A pre-registered analysis; every field is declared in :data:`FIELDS`.

    ``Plan(metric="accuracy", column="correct", id="qid", comparison="superiority",
    items=1200)`` is the smallest plan; the rest have defaults. A bad, missing or unknown
    field raises :class:`labcoat.InputError` with one line.
    """

    metric: str
    column: str
    id: str
    comparison: str
    items: int
    margin: float = 0.0
    test: str = "auto"
    alpha: float = 0.05
    sides: str = "one-sided"
    better: str = "higher"
    cluster: str | None = None
    seeds: int = 1
    seed_column: str | None = None
    seeds_a: tuple[str, ...] = ()
    seeds_b: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    label: str | None = None
    stopping: str = "fixed"
    looks: int = 1
    bounds: tuple[float, float] = (0.0, 1.0)
    family: str | None = None
    family_size: int = 1
    correction: str = "holm"
    control: str = "baseline"
    changes: tuple[str, ...] = ()
    dataset_a: str | None = None
    dataset_b: str | None = None
    variance: float | None = None
    design_effect: float = 1.0
    effect: float | None = None
    power: float = 0.8
    resamples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        for name, (_, constraint, _doc) in FIELDS.items():
            value = getattr(self, name)
            if constraint is None:
                value = _bounds(value, f"plan.{name}")
            else:
                value = constraint.check(value, f"plan.{name}")
            object.__setattr__(self, name, value)
        self._cross_check()
        object.__setattr__(self, "test", self.resolved_test())

    def _cross_check(self) -> None:
        if self.comparison in ("non-inferiority", "equivalence") and self.margin <= 0:
            raise InputError(
                f"`plan.margin` must be > 0 for a {self.comparison} comparison; got "
                f"{self.margin!r}. Give the largest difference you would still call "
                f"{'no worse' if self.comparison == 'non-inferiority' else 'equivalent'}."
            )
        for arm in ("seeds_a", "seeds_b"):
            listed = getattr(self, arm)
            if listed and len(listed) != self.seeds:
                raise InputError(
                    f"`plan.{arm}` lists {len(listed)} seed(s) but `plan.seeds` is {self.seeds}; "
                    "make them agree."
                )
        if self.stopping == "fixed" and self.looks != 1:
            raise InputError(
                f"`plan.looks` must be 1 under a fixed-n plan; got {self.looks}. Use "
                'stopping = "sequential" to look more than once.'
            )
        if self.stopping == "sequential" and self.test not in ("auto", "sequential"):
            raise InputError(
                f"`plan.test` must be 'sequential' (or 'auto') under a sequential plan; got "
                f"{self.test!r}: a fixed-n test is not valid under optional stopping."
            )
        if self.test == "sequential" and self.stopping != "sequential":
            raise InputError(
                "`plan.test` = 'sequential' needs stopping = \"sequential\"; got "
                f"stopping = {self.stopping!r}."
            )
        if self.resolved_test() == "bootstrap" and self.metric not in BOOTSTRAP_METRICS:
            raise InputError(
                f"`plan.metric` must be one of {', '.join(BOOTSTRAP_METRICS)} for a bootstrap "
                f'test; got {self.metric!r}. Use test = "paired" for a mean of per-item scores.'
            )
        if self.resolved_test() == "bootstrap" and self.label is None:
            raise InputError(
                f"`plan.label` is needed for {self.metric}: the column with each item's true "
                "label (the score column holds the prediction)."
            )
        if self.resolved_test() == "mcnemar" and (
            self.comparison != "superiority" or self.margin != 0
        ):
            raise InputError(
                "`plan.test` = 'mcnemar' tests equal accuracy: it needs comparison = "
                f'"superiority" with margin 0; got {self.comparison} with margin '
                f'{self.margin:g}. Use test = "paired" for a margin.'
            )
        if self.resolved_test() in ("mcnemar", "bootstrap") and self.seeds != 1:
            raise InputError(
                f"`plan.test` = {self.resolved_test()!r} needs one answer per item (seeds = 1); "
                "got seeds = "
                f'{self.seeds}. Use test = "paired" for several seeds.'
            )

    def resolved_test(self) -> str:
        """The test the data's shape calls for: sequential under a sequential plan, a paired
        bootstrap for F1-like metrics, otherwise the paired difference with CR1 SE."""
        if self.test != "auto":
            return self.test
        if self.stopping == "sequential":
            return "sequential"
        return "bootstrap" if self.metric in BOOTSTRAP_METRICS else "paired"

    @property
    def target(self) -> float | None:
        """The effect the design must detect: the margin, else the stated effect."""
        return self.margin if self.margin > 0 else self.effect

    # ---- plain data ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "plan") -> "Plan":
        """A plan from a mapping; a missing or unknown field is one line naming ``source``."""
        if not isinstance(data, Mapping):
            raise InputError(
                f"{source}: expected a table of plan fields; got {type(data).__name__}"
            )
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise InputError(
                f"{source}: unknown field {unknown[0]!r}; a plan's fields are {', '.join(FIELDS)}"
            )
        missing = [n for n, (d, _, _) in FIELDS.items() if d is REQUIRED and n not in data]
        if missing:
            raise InputError(
                f"{source}: missing field {missing[0]!r} ({FIELDS[missing[0]][2]}); a plan needs "
                f"{', '.join(n for n, (d, _, _) in FIELDS.items() if d is REQUIRED)}"
            )
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        try:
            return cls(**values)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None

    def revised(self, **changes: Any) -> "Plan":
        """A copy with ``changes`` (validated like a new plan)."""
        return replace(self, **changes)

    # ---- TOML ---------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> "Plan":
        """A plan from a TOML file. ``exclude_file = "flags.json"`` (an audit's flagged rows, or
        a JSON list of ids) is read now, so the ids themselves are sealed with the plan."""
        import tomllib

        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{p}: no such plan file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: could not be read ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{p}: is not valid TOML ({exc})") from None
        return cls.from_toml_dict(data, source=str(p), base=p.parent)

    @classmethod
    def from_toml_dict(
        cls, data: dict[str, Any], *, source: str = "plan", base: Path | None = None
    ) -> "Plan":
        data = dict(data)
        flagged = data.pop("exclude_file", None)
        if flagged is not None:
            from labcoat.stats.readers import read_id_list

            if not isinstance(flagged, str):
                raise InputError(f"{source}: `exclude_file` must be a path; got {flagged!r}")
            where = Path(flagged) if base is None else base / flagged
            data["exclude"] = [*data.get("exclude", []), *read_id_list(where)]
        return cls.from_dict(data, source=source)

    def to_toml(self) -> str:
        """The plan as flat TOML (absent fields left out); :meth:`read` reads it back."""
        lines = []
        for name, value in self.to_dict().items():
            if value is None:
                continue
            lines.append(f"{name} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"

    def write(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.write_text(self.to_toml(), encoding="utf-8")
        return p


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string uses JSON's escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a plan file")


#: bare words that look like "no value": refused for an optional field (``KEY=`` unsets it)
_NONE_WORDS = ("none", "null", "nil", "na", "n/a")


def parse_fields(items: Any) -> dict[str, Any]:
    """``KEY=VALUE`` plan fields (``labcoat ledger --plan-field``), each VALUE read as a TOML
    value; a bare word is text (``metric=accuracy``). ``KEY=`` (nothing after ``=``) unsets the
    field: its default (``cluster=`` for no cluster column). A bare ``none`` for a field that
    can be absent is refused rather than taken as a column name (``cluster="none"`` quoted names
    a column called none)."""
    import tomllib

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"--plan-field: expected KEY=VALUE (e.g. margin=0.02); got {item!r}")
        if key in FIELDS and not value.strip():
            default = FIELDS[key][0]
            if default is REQUIRED:
                raise InputError(
                    f"--plan-field {key}=: {key!r} is required ({FIELDS[key][2]}) and cannot be "
                    "unset; give it a value"
                )
            out[key] = default
            continue
        if key in FIELDS and FIELDS[key][0] is None and value.strip().lower() in _NONE_WORDS:
            raise InputError(
                f"--plan-field {key}={value.strip()}: to unset {key!r} write `{key}=` (nothing "
                f'after =); for a column named {value.strip()!r} quote it: {key}="{value.strip()}"'
            )
        try:
            out[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            out[key] = value
    return out


def plan_from(path: Any = None, fields: Any = ()) -> Plan | None:
    """The plan a TOML file and ``KEY=VALUE`` fields describe (the fields on top of the file's,
    or alone); None when neither is given."""
    fields = tuple(fields)
    if path is None and not fields:
        return None
    if path is None:
        return Plan.from_toml_dict(parse_fields(fields), source="--plan-field")
    plan = Plan.read(path)
    return plan.revised(**parse_fields(fields)) if fields else plan


def coerce_plan(plan: Any) -> Plan:
    """A :class:`Plan` from a plan, a mapping of its fields, or a path to a TOML file."""
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, Mapping):
        return Plan.from_dict(plan)
    if isinstance(plan, (str, os.PathLike)):
        return Plan.read(plan)
    raise InputError(
        f"plan: expected a labcoat.Plan, a dict of its fields or a TOML file; got "
        f"{type(plan).__name__}"
    )
