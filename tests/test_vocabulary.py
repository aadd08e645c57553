"""One vocabulary (docs/conventions.md): ``seed``, ``level``, ``n_jobs``; the old names keep
working one release with a DeprecationWarning naming the new one. Parameters are declared once
per public entry point (``validate_params``)."""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest

from labcoat._validation import (
    N_JOBS,
    PROBABILITY,
    Interval,
    deprecated_alias,
    renamed,
    validate_params,
)
from labcoat.errors import InputError

# -- the two helpers -------------------------------------------------------------------------


@renamed(random_state="seed")
@validate_params({"seed": Interval(int, 0), "level": (PROBABILITY, "Try 0.95.")})
def _draw(n, *, seed=0, level=0.95):
    return n, seed, level


def test_renamed_passes_the_old_keyword_on_with_a_warning_naming_the_new_one():
    with pytest.warns(DeprecationWarning, match=r"`random_state` is deprecated.*use `seed`"):
        assert _draw(1, random_state=3) == (1, 3, 0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _draw(1, seed=3) == (1, 3, 0.95)  # the new name is silent


def test_renamed_refuses_both_names_and_a_stale_declaration():
    with pytest.raises(TypeError, match="both `random_state`.*and `seed`"):
        _draw(1, random_state=3, seed=3)
    with pytest.raises(TypeError, match="no parameter"):
        renamed(old="missing")(lambda x: x)


def test_validate_params_names_the_parameter_what_it_needs_and_the_fix():
    with pytest.raises(InputError, match=r"`seed` must be an int >= 0; got -1\."):
        _draw(1, seed=-1)
    with pytest.raises(InputError, match=r"`level` must be .*strictly between 0 and 1.*Try 0\.95"):
        _draw(1, level=95)
    with pytest.raises(InputError, match="`seed`"):  # the old name is checked as the new one
        with pytest.warns(DeprecationWarning):
            _draw(1, random_state=-1)
    assert _draw.parameter_constraints.keys() == {"seed", "level"}


def test_validate_params_refuses_a_constraint_for_no_parameter():
    with pytest.raises(TypeError, match="no parameter"):
        validate_params({"sed": N_JOBS})(lambda seed: seed)


def test_n_jobs_is_a_positive_int_minus_one_or_none():
    assert all(N_JOBS.is_satisfied_by(v) for v in (1, 8, -1, None))
    assert not any(N_JOBS.is_satisfied_by(v) for v in (0, -2, 1.5, True, "4"))


def test_a_renamed_attribute_warns_and_reads_the_new_one():
    class Result:
        level = 0.9
        confidence = deprecated_alias("confidence", "level")

    with pytest.warns(DeprecationWarning, match=r"Result.confidence is deprecated.*\.level"):
        assert Result().confidence == 0.9


# -- every renamed parameter of labcoat's API ----------------------------------------------------

rng = np.random.default_rng(0)
A, B = (rng.random(60) < 0.7) * 1.0, (rng.random(60) < 0.6) * 1.0
IDS = np.arange(60)
RUNS = rng.normal(0.5, 0.2, size=(5, 3))


def _stats(name):
    return getattr(importlib.import_module("labcoat.stats"), name)


#: (callable, positional args, the old keyword, its value): each is called with the old name
#: and must warn and answer as the new name does
CASES = [
    ("mean", lambda: (_stats("mean"), (A,), {}), "confidence", 0.9),
    ("compare", lambda: (_stats("compare"), (A, B), {}), "confidence", 0.9),
    (
        "compare_excluding",
        lambda: (_stats("compare_excluding"), (A, B, [1]), {"ids_a": IDS, "ids_b": IDS}),
        "confidence",
        0.9,
    ),
    ("gate", lambda: (_stats("gate"), (A, B, 0.05), {}), "confidence", 0.9),
    (
        "leaderboard",
        lambda: (_stats("leaderboard"), ({"a": A, "b": B},), {"n_resamples": 50}),
        "confidence",
        0.9,
    ),
    (
        "leaderboard",
        lambda: (_stats("leaderboard"), ({"a": A, "b": B},), {"n_resamples": 50}),
        "random_state",
        3,
    ),
    (
        "bootstrap_metric",
        lambda: (_stats("bootstrap_metric"), (np.stack([A, A * 0 + 1], 1), "mean"), {}),
        "random_state",
        3,
    ),
    (
        "bootstrap_metric",
        lambda: (
            _stats("bootstrap_metric"),
            (np.stack([A, A * 0 + 1], 1), "mean"),
            {"seed": 0},
        ),
        "confidence",
        0.9,
    ),
    ("aggregate", lambda: (_stats("aggregate"), (RUNS,), {"n_resamples": 50}), "random_state", 1),
    (
        "aggregate",
        lambda: (_stats("aggregate"), (RUNS,), {"n_resamples": 50, "seed": 0}),
        "confidence",
        0.9,
    ),
    (
        "probability_of_improvement",
        lambda: (_stats("probability_of_improvement"), (RUNS, RUNS + 0.1), {"n_resamples": 50}),
        "random_state",
        1,
    ),
    (
        "summarize_runs",
        lambda: (_stats("summarize_runs"), (RUNS.reshape(-1),), {"n_resamples": 50, "seed": 0}),
        "confidence",
        0.9,
    ),
    (
        "paired_permutation_test",
        lambda: (_stats("paired_permutation_test"), (A, B), {"n_resamples": 99}),
        "random_state",
        2,
    ),
    ("replay", lambda: (_stats("replay"), (A,), {"width": 0.5}), "confidence", 0.9),
    ("proportion", lambda: (_stats("proportion"), (7, 10), {}), "confidence", 0.9),
    (
        "proportion_from_scores",
        lambda: (_stats("proportion_from_scores"), (A,), {}),
        "confidence",
        0.9,
    ),
    ("ConfidenceSequence", lambda: (_stats("ConfidenceSequence"), (0, 1), {}), "confidence", 0.9),
    (
        "confidence_interval",
        lambda: (_stats("mean")(A).confidence_interval, (), {}),
        "confidence_level",
        0.9,
    ),
    (
        "ProportionResult.confidence_interval",
        lambda: (_stats("proportion")(7, 10).confidence_interval, (), {}),
        "confidence_level",
        0.9,
    ),
    (
        "duplicates",
        lambda: (
            importlib.import_module("labcoat.audit").duplicates,
            (np.eye(4), np.eye(4)),
            {"ledger": False},
        ),
        "workers",
        1,
    ),
    (
        "make_engine",
        lambda: (importlib.import_module("labcoat.audit.engine").make_engine, ("local",), {}),
        "workers",
        2,
    ),
]


def _same(x, y):
    if hasattr(x, "pairs") and hasattr(x, "within"):  # duplicates: its to_dict holds timings
        return x.pairs == y.pairs
    if hasattr(x, "to_dict"):
        return x.to_dict() == y.to_dict()
    if hasattr(x, "n_jobs"):
        return x.n_jobs == y.n_jobs
    if hasattr(x, "level") and not isinstance(x, tuple):
        return x.level == y.level
    return x == y


@pytest.mark.parametrize(
    ("name", "make", "old", "value"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES]
)
def test_every_old_name_warns_naming_the_new_one_and_still_works(name, make, old, value):
    fn, args, kwargs = make()
    target = {"confidence": "level", "confidence_level": "level"}.get(old)
    target = target or {"random_state": "seed", "workers": "n_jobs"}[old]
    with pytest.warns(DeprecationWarning, match=rf"`{old}` is deprecated.*use `{target}`"):
        before = fn(*args, **kwargs, **{old: value})
    after = fn(*args, **kwargs, **{target: value})
    assert _same(before, after)


def test_the_renamed_result_attributes_warn_and_read_level():
    from labcoat import stats

    for result in (
        stats.mean(A, level=0.9),
        stats.compare(A, B, level=0.9),
        stats.proportion(7, 10, level=0.9),
        stats.replay(A, width=0.5, level=0.9),
        stats.leaderboard({"a": A, "b": B}, n_resamples=50, level=0.9),
        stats.ConfidenceSequence(0, 1, level=0.9),
    ):
        with pytest.warns(DeprecationWarning, match=r"confidence is deprecated.*\.level"):
            assert result.confidence == result.level == 0.9


def test_the_to_dict_and_json_say_level():
    from labcoat import stats

    assert stats.mean(A, level=0.9).to_dict()["level"] == 0.9
    assert "confidence" not in stats.compare(A, B).to_dict()


def test_labcoats_public_api_uses_the_new_names_only():
    """No public function of the engines still declares an old name as a parameter."""
    import labcoat
    from labcoat import audit, scale, stats

    old = {"random_state", "confidence", "confidence_level", "workers"}
    found = []
    for module in (stats, scale, audit, labcoat):
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name, None)
            if not callable(obj) or name.startswith("_"):
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            found += [f"{module.__name__}.{name}({p})" for p in params if p in old]
    assert found == []


def test_the_cli_takes_level_and_jobs_and_says_which_option_replaced_the_old_one(cli, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("score\n" + "\n".join(str(int(v)) for v in A))
    new = cli("stats", "mean", path, "--score", "score", "--level", "0.9", "--json")
    old = cli("stats", "mean", path, "--score", "score", "--confidence", "0.9", "--json")
    assert new.code == old.code == 0, (new.err, old.err)
    assert new.out == old.out and '"level": 0.9' in new.out
    assert "--confidence is deprecated; use --level" in old.err
    assert "--jobs" in cli("audit", "duplicates", "--help").out


def test_the_doctors_permutation_test_and_the_watchs_evaluation_take_the_new_names():
    import labcoat
    from labcoat.watch import Evaluation

    def score(X, y):
        return float(np.mean(np.asarray(y)[:10]))

    X, y = np.zeros((20, 2)), np.arange(20) % 2
    with pytest.warns(DeprecationWarning, match="use `seed`"):
        old = labcoat.permutation_test(score, X, y, n_permutations=5, random_state=1)
    new = labcoat.permutation_test(score, X, y, n_permutations=5, seed=1)
    np.testing.assert_array_equal(old.null_distribution, new.null_distribution)
    with pytest.warns(DeprecationWarning, match="use `level`"):
        ev = Evaluation([], lambda b: b, every=5, confidence=0.9)
    assert ev.level == 0.9 and ev.settings()["level"] == 0.9


# -- every public entry point declares its parameters (scikit-learn's check_param_validation) ----


def _entry_points():
    import labcoat
    from labcoat import audit, scale, stats
    from labcoat.watch.watcher import Watcher

    names = {
        stats: [
            "mean",
            "compare",
            "compare_excluding",
            "gate",
            "leaderboard",
            "bootstrap_metric",
            "bootstrap_confusion",
            "bootstrap_difference",
            "aggregate",
            "probability_of_improvement",
            "summarize_runs",
            "paired_permutation_test",
            "replay",
            "proportion",
            "proportion_from_scores",
            "compare_files",
            "read_sides",
            "choose_design_effect",
        ],
        audit: ["duplicates", "contamination", "label_issues"],
        scale: ["fit", "backtest"],
        labcoat: ["diagnose"],
    }
    out = [(f"{m.__name__}.{n}", getattr(m, n)) for m, ns in names.items() for n in ns]
    return [*out, ("labcoat.watch.Watcher", Watcher.__init__)]


def _invalid(constraint):
    """A value ``constraint`` refuses (scikit-learn's generate_invalid_param_val)."""
    for candidate in ("not valid", -3, 0, 1.5, -1, None, object()):
        if not constraint.is_satisfied_by(candidate):
            return candidate
    raise AssertionError(f"found no value {constraint} refuses")


def _valid(constraint):
    for candidate in (0.5, 1, 2, True, None, "cr1", 0, lambda *a: 0.0):
        if constraint.is_satisfied_by(candidate):
            return candidate
    options = getattr(constraint, "options", ())
    return tuple(options)[0]


@pytest.mark.parametrize(("name", "fn"), _entry_points(), ids=[n for n, _ in _entry_points()])
def test_every_public_entry_point_refuses_a_bad_value_of_each_declared_parameter(name, fn):
    constraints = getattr(fn, "parameter_constraints", None)
    assert constraints, f"{name} declares no parameter constraints (use validate_params)"
    params = inspect.signature(fn).parameters
    for param, declared in constraints.items():
        constraint = declared[0] if isinstance(declared, tuple) else declared
        kwargs = {}
        for p in params.values():  # every required argument, valid where it is constrained
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                other = constraints.get(p.name)
                other = other[0] if isinstance(other, tuple) else other
                kwargs[p.name] = _valid(other) if other is not None else None
        kwargs[param] = _invalid(constraint)
        with pytest.raises(InputError, match=f"`{param}` must be"):
            fn(**kwargs)


def test_every_interval_is_a_ci_property_holding_a_confidence_interval():
    from labcoat import stats
    from labcoat.interval import ConfidenceInterval
    from labcoat.watch.evaluation import EvalResult

    ev = EvalResult("eval", 3, 10, 0.5, 0.4, 0.6, 0.95, False, 1, 0.1)
    for result in (
        stats.mean(A),
        stats.compare(A, B),
        stats.gate(A, B, 0.05),
        stats.proportion(7, 10),
        stats.replay(A, width=0.5),
        ev,
    ):
        assert isinstance(result.ci, ConfidenceInterval), type(result).__name__
    assert ev.ci == (0.4, 0.6)


def test_the_names_renamed_for_one_idea_each_keep_working_one_release_and_warn():
    """evals' ``Plan`` (beside ``labcoat.Plan``), scale's ``bootstrap=``/``reps=`` (beside
    ``n_resamples=``) and ``ScalingFit.ci(level)`` (beside the ``ci`` property elsewhere)."""
    import numpy as np

    from labcoat import evals, scale
    from labcoat.evals.history import History

    with pytest.warns(DeprecationWarning, match=r"labcoat.evals.Plan .*labcoat.evals.SubsetPlan"):
        assert evals.Plan is evals.SubsetPlan
    with pytest.warns(DeprecationWarning, match="labcoat.evals.plan.SubsetPlan"):
        from labcoat.evals.plan import Plan  # noqa: F401
    x = np.logspace(2, 5, 12)
    with pytest.warns(DeprecationWarning, match="`bootstrap` is deprecated.*`n_resamples`"):
        old = scale.fit(x, None, 1.7 + 300 * x**-0.3, form="curve", bootstrap=5, ledger=False)
    new = scale.fit(x, None, 1.7 + 300 * x**-0.3, form="curve", n_resamples=5, ledger=False)
    with pytest.warns(DeprecationWarning, match=r"ScalingFit.confidence_interval\(level\)"):
        assert old.ci(0.9) == new.confidence_interval(0.9)
    rng = np.random.default_rng(0)
    history = History.from_matrix((rng.random((80, 6)) < 0.6).astype(float))
    with pytest.warns(DeprecationWarning, match="`reps` is deprecated.*`n_resamples`"):
        evals.plan_subset(history, 20, reps=2, method="random")
