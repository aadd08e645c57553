"""The table-level decisions of ``labcoat stats`` as library functions (labcoat.stats.tables):
each planted mistake is refused or caught, and its healthy twin gives what the direct call does."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat import stats
from labcoat.errors import InputError


def _csv(path, **columns):
    names = list(columns)
    rows = zip(*(columns[n] for n in names))
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(map(str, r)) for r in rows))
    return path


@pytest.fixture
def two_models(tmp_path):
    rng = np.random.default_rng(0)
    ids = np.arange(80)
    a, b = (rng.random(80) < 0.75).astype(int), (rng.random(80) < 0.6).astype(int)
    order = rng.permutation(80)  # B's file lists the questions in another order
    fa = _csv(tmp_path / "model-a.csv", id=ids, score=a, topic=ids % 8)
    fb = _csv(tmp_path / "model-b.csv", id=ids[order], score=b[order], topic=ids[order] % 8)
    return fa, fb, a, b


def test_read_sides_pairs_two_files_by_id_and_one_file_by_column(two_models, tmp_path):
    fa, fb, a, b = two_models
    sides = stats.read_sides(fa, fb, score="score", on="id")
    assert sides.labels == ("model-a", "model-b")
    assert stats.compare_files(fa, fb, score="score", on="id").result == stats.compare(a, b)
    wide = _csv(tmp_path / "wide.csv", a=a, b=b)
    one = stats.read_sides(wide, score=("a", "b"))
    assert one.labels == ("a", "b") and np.array_equal(one.b, b)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": "score"}, "needs --on"),  # paired files without ids: silently by position
        ({"score": ("score", "score"), "on": "id"}, "two files take one --score"),
    ],
)
def test_read_sides_refuses_a_pairing_it_cannot_make(two_models, kwargs, message):
    fa, fb, _, _ = two_models
    with pytest.raises(InputError, match=message):
        stats.read_sides(fa, fb, **kwargs)


def test_mcnemar_applies_only_to_paired_0_1_scores_one_per_question():
    a, b = np.array([1, 0, 1, 1]), np.array([0, 0, 1, 0])
    assert stats.mcnemar_applies(a, b) is None
    assert "0/1" in stats.mcnemar_applies(a * 0.5, b)  # scores, not answers
    assert "one answer" in stats.mcnemar_applies(a, b, ids_a=[1, 1, 2, 3], ids_b=[1, 2, 3, 4])
    with pytest.raises(InputError, match="McNemar"):
        stats.paired_mcnemar(a * 0.5, b)


def test_paired_mcnemar_matches_questions_by_id(two_models):
    fa, fb, a, b = two_models
    found = stats.compare_files(fa, fb, score="score", on="id", mcnemar=True)
    assert found.mcnemar == stats.mcnemar(a, b)  # B's rows were shuffled in its file
    assert found.to_dict()["mcnemar"] == stats.mcnemar(a, b).to_dict()


def test_exclusions_rescore_a_paired_comparison_by_id(two_models):
    fa, fb, a, b = two_models
    found = stats.compare_files(fa, fb, score="score", on="id", exclude=[0, 1, 2])
    assert isinstance(found.result, stats.ExclusionResult)
    assert found.result.kept == stats.compare(
        a[3:], b[3:], ids_a=np.arange(3, 80).astype(str), ids_b=np.arange(3, 80).astype(str)
    )
    with pytest.raises(InputError, match="re-scores the comparison only"):
        stats.compare_files(fa, fb, score="score", on="id", exclude=[0], mcnemar=True)
    with pytest.raises(InputError, match="--exclude needs --on"):
        stats.compare_files(fa, fb, score="score", unpaired=True, exclude=[0])


def test_the_design_effect_comes_from_exactly_one_source(two_models):
    fa, fb, a, b = two_models
    assert stats.choose_design_effect() == 1.0
    assert stats.choose_design_effect(icc=0.1, cluster_size=11) == pytest.approx(2.0)
    assert stats.choose_design_effect(design_effect=1.7) == 1.7
    with pytest.raises(InputError, match="give one of"):
        stats.choose_design_effect(icc=0.1, cluster_size=11, design_effect=1.7)
    with pytest.raises(InputError, match="go together"):
        stats.choose_design_effect(icc=0.1)
    with pytest.raises(InputError, match="give --pilot-a"):
        stats.choose_design_effect(cluster="topic")
    from_pilot = stats.choose_design_effect(
        pilot_a=fa, pilot_b=fb, on="id", score="score", cluster="topic"
    )
    direct = stats.estimate_design_effect(a - b, np.arange(80) % 8).design_effect
    assert from_pilot == pytest.approx(direct)
    est = stats.pilot_components(fa, fb, on="id", score="score")
    assert est == stats.variance_components(a, b)


def test_models_are_named_by_name_file_then_stem_and_never_twice(two_models, tmp_path):
    fa, fb, _, _ = two_models
    names, tables = stats.read_models([f"first={fa}", str(fb)])
    assert names == ["first", "model-b"] and len(tables) == 2
    with pytest.raises(InputError, match="share a name"):
        stats.read_models([f"x={fa}", f"x={fb}"])
    with pytest.raises(InputError, match="at least 2"):
        stats.read_models([str(fa)])


def test_a_baseline_is_aligned_on_shared_ids_and_strict_refuses_a_partial_overlap():
    x, base = np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.25, 0.75])
    mine, theirs, notes = stats.align_baseline(x, ["a", "b", "c"], base, ["c", "b", "z"])
    assert mine.tolist() == [0.0, 1.0] and theirs.tolist() == [0.25, 0.5]
    assert "1 item(s) only in A and 1 only in the baseline" in notes[0]
    same = stats.align_baseline(x, ["a", "b", "c"], base, ["a", "b", "c"])
    assert same[2] == () and same[1].tolist() == base.tolist()
    with pytest.raises(InputError, match="question ids differ"):
        stats.align_baseline(x, ["a", "b", "c"], base, ["c", "b", "z"], strict=True)
