"""A plan: declared fields, one-line errors for a missing, unknown or wrong field, TOML."""

from __future__ import annotations

import json

import pytest

import labcoat
from labcoat.errors import InputError
from labcoat.verdicts.plan import FIELDS, Plan

BASE = dict(metric="accuracy", column="correct", id="qid", comparison="superiority", items=100)


def test_labcoat_plan_is_lazy_and_the_smallest_plan_takes_defaults():
    assert labcoat.Plan is Plan
    plan = Plan(**BASE)
    assert plan.test == "paired" and plan.alpha == 0.05 and plan.sides == "one-sided"
    assert set(plan.to_dict()) == set(FIELDS)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(alpha=1.5), "`plan.alpha` must be a number strictly between 0 and 1; got 1.5."),
        (dict(comparison="better"), "`plan.comparison` must be one of"),
        (dict(items=0), "`plan.items` must be an int >= 1; got 0."),
        (dict(comparison="equivalence"), "`plan.margin` must be > 0 for a equivalence"),
        (dict(seeds=2, seeds_a=("0",)), "`plan.seeds_a` lists 1 seed(s) but `plan.seeds` is 2"),
        (dict(looks=3), "`plan.looks` must be 1 under a fixed-n plan"),
        (dict(test="mcnemar", margin=0.02), "'mcnemar' tests equal accuracy"),
        (dict(metric="f1"), "`plan.label` is needed for f1"),
        (dict(stopping="sequential", test="paired", looks=3), "must be 'sequential'"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(change, message):
    with pytest.raises(InputError) as caught:
        Plan(**{**BASE, **change})
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_healthy_twins_of_the_cross_checks_pass():
    assert Plan(**{**BASE, "comparison": "equivalence", "margin": 0.01}).margin == 0.01
    assert Plan(**{**BASE, "seeds": 2, "seeds_a": ["0", 1], "seeds_b": (0, 1)}).seeds_a == (
        "0",
        "1",
    )
    assert Plan(**{**BASE, "stopping": "sequential", "looks": 3}).test == "sequential"
    assert Plan(**{**BASE, "metric": "f1", "label": "gold"}).test == "bootstrap"
    assert Plan(**{**BASE, "test": "mcnemar"}).test == "mcnemar"


def test_missing_and_unknown_fields_are_refused_by_name():
    with pytest.raises(InputError, match=r"plan: missing field 'column' \(the per-item score"):
        Plan.from_dict({k: v for k, v in BASE.items() if k != "column"})
    with pytest.raises(InputError, match="plan: unknown field 'colour'"):
        Plan.from_dict({**BASE, "colour": "red"})
    assert Plan.from_dict(BASE) == Plan(**BASE)


def test_toml_round_trip_and_exclude_file(tmp_path):
    (tmp_path / "flags.json").write_text(json.dumps({"issues": [3, "q7"]}))
    (tmp_path / "plan.toml").write_text(
        'metric = "accuracy"\ncolumn = "correct"\nid = "qid"\ncomparison = "non-inferiority"\n'
        'items = 100\nmargin = 0.02\nchanges = ["lr"]\nexclude_file = "flags.json"\n'
        'family = "tasks"\nfamily_size = 3\n'
    )
    plan = Plan.read(tmp_path / "plan.toml")
    assert plan.exclude == ("3", "q7") and plan.changes == ("lr",) and plan.margin == 0.02
    again = Plan.read(plan.write(tmp_path / "again.toml"))
    assert again == plan


@pytest.mark.parametrize(
    "text, message",
    [
        ('metric = "accuracy"\n', "missing field 'column'"),
        (
            'metric = "a"\ncolumn = "c"\nid = "q"\ncomparison = "superiority"\nitems = 5\n'
            "who = 1\n",
            "unknown field 'who'",
        ),
        ("metric = \n", "is not valid TOML"),
    ],
)
def test_a_bad_plan_file_is_one_line_and_exit_2(cli, tmp_path, text, message):
    (tmp_path / "plan.toml").write_text(text)
    got = cli(
        "ledger",
        "add",
        "h",
        "--predict",
        "p",
        "--plan",
        tmp_path / "plan.toml",
        "--ledger",
        tmp_path / "l.db",
    )
    assert got.code == 2 and message in got.err and len(got.err.strip().splitlines()) == 1
