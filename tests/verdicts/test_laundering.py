"""The four ways of laundering a verdict into "by the registered plan", from the CLI, each with
an honest twin (register, then produce the results, then judge) that must keep the words.

1. revise the plan after peeking, then copy the results files again so they look newer;
2. re-run the verdict on results edited after a verdict;
3. register the hypothesis after its results exist (files, an earlier verdict, a run);
4. register with the results themselves as the "pilot", then judge them.

Each runs on small generated files (everywhere) and on the real MMLU-Pro per-question results of
Llama-3.1-8B Instruct vs base in ``../shared/data/evals`` (skipped where that data is absent).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

EVALS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "evals"
CATEGORIES = 14


def _write(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _generated(folder: Path) -> tuple[Path, Path]:
    """Instruct-like vs base-like results: 2,800 questions in 14 categories, a true gain of
    about 7 points, so a margin of 0.08 is inconclusive and one of 0.01 confirmed."""
    rng = np.random.default_rng(34)
    n = 200 * CATEGORIES
    category = [f"c{i % CATEGORIES}" for i in range(n)]
    ease = rng.normal(0, 1, n) + np.repeat(rng.normal(0, 0.3, CATEGORIES), n // CATEGORIES)
    a = (rng.random(n) < 1 / (1 + np.exp(-(ease + 0.7)))).astype(int)
    b = (rng.random(n) < 1 / (1 + np.exp(-(ease + 0.35)))).astype(int)
    folder.mkdir(exist_ok=True)
    out = []
    for name, scores in (("instruct", a), ("base", b)):
        rows = [
            {"question_id": str(i), "category": category[i], "correct": int(scores[i])}
            for i in range(n)
        ]
        out.append(_write(folder / f"{name}.csv", rows))
    return out[0], out[1]


@pytest.fixture(params=["generated", "mmlu-pro"])
def origin(request, tmp_path) -> tuple[Path, Path]:
    """Where the results come from (an eval's output): generated now, or the shared files."""
    if request.param == "generated":
        return _generated(tmp_path / "origin")
    a, b = EVALS / "mmlupro_instruct.csv", EVALS / "mmlupro_base.csv"
    if not (a.exists() and b.exists()):
        pytest.skip(f"{a} or {b} is absent (shared eval data)")
    return a, b


class Study:
    """One analyst's study through the CLI, on its own ledger."""

    def __init__(self, cli, folder: Path, origin: tuple[Path, Path]):
        self.cli, self.folder, self.origin = cli, folder, origin
        self.ledger = folder / "ledger.db"
        self.copies = 0

    def register(
        self, margin: float, items: int | None = None, title: str = "h", pilot=None
    ) -> int:
        items = items or len(_read(self.origin[0]))
        fields = [
            "metric=accuracy",
            "column=correct",
            "id=question_id",
            "cluster=category",
            "comparison=superiority",
            f"margin={margin}",
            f"items={items}",
        ]
        got = self.cli(
            "ledger",
            "add",
            title,
            "--predict",
            "instruct beats base",
            "--ledger",
            self.ledger,
            *[x for f in fields for x in ("--plan-field", f)],
            *(() if pilot is None else ("--pilot-a", pilot[0], "--pilot-b", pilot[1])),
            "--json",
        )
        assert got.code == 0, got.err
        return json.loads(got.out)["id"]

    def produce(self, *, keep_times: bool = False) -> tuple[Path, Path]:
        """The results, as an eval writes them now (or a copy keeping the original's times)."""
        self.copies += 1
        where = self.folder / f"results{self.copies}"
        where.mkdir()
        copy = shutil.copy2 if keep_times else shutil.copy
        return tuple(Path(copy(f, where / f.name)) for f in self.origin)

    def revise(self, entry: int, *fields: str) -> None:
        args = [x for f in fields for x in ("--plan-field", f)]
        got = self.cli("ledger", "plan", entry, *args, "--ledger", self.ledger)
        assert got.code == 0, got.err

    def verdict(self, entry: int, files, *options: str):
        a, b = files
        text = self.cli("verdict", entry, "--a", a, "--b", b, "--ledger", self.ledger, *options)
        assert text.code != 2, text.err
        return text.code, text.out.splitlines()[0], text

    def judged(self, entry: int, files, *options: str) -> dict:
        a, b = files
        got = self.cli(
            "verdict", entry, "--a", a, "--b", b, "--ledger", self.ledger, "--json", *options
        )
        assert got.code != 2, got.err
        return json.loads(got.out)

    def status(self, entry: int) -> str:
        got = self.cli("ledger", "list", "--ledger", self.ledger, "--json")
        return next(e["plan"] for e in json.loads(got.out)["entries"] if e["id"] == entry)


def kinds(judged: dict) -> set[str]:
    return {d["kind"] for d in judged["deviations"]}


@pytest.fixture
def study(cli, tmp_path, origin) -> Study:
    return Study(cli, tmp_path, origin)


def _honest(study: Study, margin: float) -> tuple[int, str]:
    entry = study.register(margin)
    files = study.produce()
    code, line, _ = study.verdict(entry, files)
    return code, line


# ---- 1. a revision after peeking, then fresh files ----------------------------------------


@pytest.mark.check(
    "verdicts.deviation.margin", "verdicts.deviation.revised-after-data", healthy=True
)
def test_an_honest_study_keeps_the_words_inconclusive_at_its_margin(study):
    code, line = _honest(study, 0.08)
    assert (code, line) == (4, "#1 inconclusive, by the registered plan")
    assert study.status(1) == "planned"


@pytest.mark.check("verdicts.deviation.margin", planted=True)
def test_a_margin_revised_after_peeking_then_fresh_files_is_named_and_exits_1(study):
    entry = study.register(0.08)
    study.produce()  # looked at in pandas: no record in the ledger
    study.revise(entry, "margin=0.01")
    fresh = study.produce()  # copied again: newer than the revision
    code, line, _ = study.verdict(entry, fresh)
    assert code == 1
    assert line.startswith("#1 confirmed, DEVIATING FROM ITS PLAN (1: margin)")
    assert line.endswith("; inconclusive by the registered plan")
    found = study.judged(entry, fresh)
    assert kinds(found) == {"margin"}
    assert found["registered_verdict"] == "inconclusive"
    assert study.status(entry) == "deviating"


@pytest.mark.check("verdicts.deviation.revised-after-data", planted=True)
def test_a_margin_revised_after_a_verdict_is_revised_after_data_whatever_the_files_times(study):
    entry = study.register(0.08)
    first = study.produce()
    assert study.verdict(entry, first)[0] == 4  # the peek, sealed
    study.revise(entry, "margin=0.01")
    found = study.judged(entry, study.produce())  # a fresh copy launders nothing
    assert kinds(found) == {"margin", "revised-after-data"}
    after = next(d for d in found["deviations"] if d["kind"] == "revised-after-data")
    assert after["planned"]["revision"] == 1 and after["observed"]["revision"] == 2
    assert "first verdict" in after["observed"]["after"]


@pytest.mark.check("verdicts.deviation.revised-after-data", planted=True)
def test_a_revision_after_a_run_fingerprinted_the_results_is_revised_after_data(study):
    entry = study.register(0.08)
    a, b = study.produce()
    ran = study.cli(
        "run", "--data", a, "--data", b, "--no-git", "--no-logs", "--ledger", study.ledger,
        "--", sys.executable, "-c", "pass",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    study.revise(entry, "margin=0.01")
    found = study.judged(entry, study.produce())
    assert kinds(found) == {"margin", "revised-after-data"}
    after = next(d for d in found["deviations"] if d["kind"] == "revised-after-data")
    assert "`labcoat run` #1" in after["observed"]["after"]


@pytest.mark.check("verdicts.deviation.items", planted=True)
def test_items_revised_down_after_dropping_categories_is_named(study):
    entry = study.register(0.01)
    a, b = study.produce()
    dropped = {"c0", "c1", "psychology", "law"}
    kept = []
    for path in (a, b):
        rows = [r for r in _read(path) if r["category"] not in dropped]
        kept.append(_write(path.with_name("kept_" + path.name), rows))
    study.revise(entry, f"items={len(_read(kept[0]))}")
    code, line, _ = study.verdict(entry, kept)
    found = study.judged(entry, kept)
    assert "items" in kinds(found)
    assert line.startswith("#1 confirmed, DEVIATING FROM ITS PLAN") and "items" in line
    # the registered plan's analysis gives the same verdict on these files: named, exit 0
    assert code == 0 and found["registered_verdict"] == "confirmed"
    assert study.status(entry) == "deviating"


# ---- 2. re-running a verdict on edited results --------------------------------------------


def _edited(path: Path) -> Path:
    rows = _read(path)
    for r in rows[:300]:
        r["correct"] = "1"
    return _write(path.with_name("edited_" + path.name), rows)


@pytest.mark.check("verdicts.deviation.after-verdict", healthy=True)
def test_judging_the_same_results_again_keeps_the_words(study):
    entry = study.register(0.01)
    files = study.produce()
    for _ in range(2):
        code, line, _ = study.verdict(entry, files)
        assert (code, line) == (0, "#1 confirmed, by the registered plan")
    assert study.status(entry) == "planned"


@pytest.mark.check("verdicts.deviation.after-verdict", planted=True)
def test_re_running_edited_results_keeps_after_verdict(study):
    entry = study.register(0.01)
    a, b = study.produce()
    assert study.verdict(entry, (a, b))[1] == "#1 confirmed, by the registered plan"
    edited = (_edited(a), b)
    for _ in range(2):  # the second run on the same edited file launders nothing
        code, line, _ = study.verdict(entry, edited)
        assert line.startswith("#1 confirmed, DEVIATING FROM ITS PLAN (1: after-verdict)")
        assert code == 0  # the registered plan gives the same verdict: named, held
    assert kinds(study.judged(entry, edited)) == {"after-verdict"}
    assert study.status(entry) == "deviating"


# ---- 3. registering after the results exist ---------------------------------------------


@pytest.mark.check(
    "verdicts.deviation.registered-late", "verdicts.deviation.judged-before", healthy=True
)
def test_registering_before_the_results_keeps_the_words(study):
    code, line = _honest(study, 0.01)
    assert (code, line) == (0, "#1 confirmed, by the registered plan")
    assert kinds(study.judged(1, study.produce())) == set()
    assert study.status(1) == "planned"


def _old(files) -> tuple[Path, Path]:
    hour_ago = time.time() - 3600
    for f in files:
        os.utime(f, (hour_ago, hour_ago))
    return files


@pytest.mark.check("verdicts.deviation.registered-late", planted=True)
def test_a_hypothesis_registered_after_its_results_files_is_named(study):
    files = _old(study.produce(keep_times=True))  # results that exist before the plan
    entry = study.register(0.01)
    code, line, _ = study.verdict(entry, files)
    assert line.startswith("#1 confirmed, DEVIATING FROM ITS PLAN (1: registered-late)")
    assert code == 0
    found = study.judged(entry, files)
    late = next(d for d in found["deviations"] if d["kind"] == "registered-late")
    assert "last modified" in late["observed"]["data_existed"]
    assert study.status(entry) == "deviating"


@pytest.mark.check("verdicts.deviation.registered-late", planted=True)
def test_results_a_run_fingerprinted_before_the_plan_are_registered_late_in_fresh_copies(study):
    a, b = study.produce()
    ran = study.cli(
        "run", "--data", a, "--data", b, "--no-git", "--no-logs", "--ledger", study.ledger,
        "--", sys.executable, "-c", "pass",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    entry = study.register(0.01)
    found = study.judged(entry, study.produce())  # copied after the plan: newer files
    assert kinds(found) == {"registered-late"}
    assert "`labcoat run` #1" in found["deviations"][0]["observed"]["data_existed"]


@pytest.mark.check("verdicts.deviation.judged-before", planted=True)
def test_results_judged_under_another_entry_are_judged_before_naming_it(study):
    first = study.register(0.08, title="instruct beats base by 8 points")
    files = study.produce()
    assert study.verdict(first, files)[0] == 4
    second = study.register(0.01, title="instruct beats base")  # a new hypothesis, same data
    code, line, _ = study.verdict(second, study.produce())
    assert line.startswith("#2 confirmed, DEVIATING FROM ITS PLAN (2: registered-late, judged")
    found = study.judged(second, study.produce())
    before = next(d for d in found["deviations"] if d["kind"] == "judged-before")
    assert before["observed"]["entry"] == first
    assert study.status(second) == "deviating"


# ---- 4. the results registered as the pilot ----------------------------------------------


def _split(files, folder: Path, share: float) -> tuple[tuple[Path, Path], tuple[Path, Path]]:
    """Each arm's rows split by question: the first ``share`` of the questions (a pilot) and
    the rest, as separate files."""
    pilot, rest = [], []
    for f in files:
        rows = _read(f)
        cut = int(len(rows) * share)
        pilot.append(_write(folder / f"pilot_{f.name}", rows[:cut]))
        rest.append(_write(folder / f"rest_{f.name}", rows[cut:]))
    return (pilot[0], pilot[1]), (rest[0], rest[1])


@pytest.mark.check("verdicts.deviation.judged-on-pilot", planted=True)
def test_the_results_registered_as_the_pilot_are_judged_on_pilot(study):
    files = study.produce()
    entry = study.register(0.01, pilot=files)  # the "pilot" is the full run
    code, line, _ = study.verdict(entry, study.produce())  # fresh copies: newer than the plan
    assert line.startswith("#1 confirmed, DEVIATING FROM ITS PLAN (1: judged-on-pilot)")
    assert code == 0  # the registered plan gives the same verdict: named, and held
    [found] = study.judged(entry, study.produce())["deviations"]
    assert found["kind"] == "judged-on-pilot" and found["observed"]["share"] == 1.0
    assert "no item outside it is left to judge" in found["evidence"]
    assert study.status(entry) == "deviating"


@pytest.mark.check("verdicts.deviation.judged-on-pilot", healthy=True)
def test_a_pilot_on_other_items_than_those_judged_keeps_the_words(study):
    pilot, rest = _split(study.produce(), study.folder, 0.2)
    entry = study.register(0.01, items=len(_read(rest[0])), pilot=pilot)
    code, line, _ = study.verdict(entry, rest)
    assert (code, line) == (0, "#1 confirmed, by the registered plan")
    assert study.status(entry) == "planned"


@pytest.mark.check("verdicts.deviation.judged-on-pilot", healthy=True)
def test_a_pilot_inside_the_data_is_named_but_no_deviation_when_the_rest_agrees(study):
    files = study.produce()
    pilot, _ = _split(files, study.folder, 0.2)
    entry = study.register(0.01, pilot=pilot)
    found = study.judged(entry, files)
    assert found["verdict"] == "confirmed" and found["deviations"] == []
    [on_pilot] = [f for f in found["findings"] if f["check"] == "deviation.judged-on-pilot"]
    assert "(20%) are the pilot's rows" in on_pilot["message"]
    assert "give the same verdict (confirmed)" in on_pilot["message"]


# ---- a ledger that fails verify -----------------------------------------------------------


@pytest.mark.check("verdicts.deviation.unverified", planted=True, healthy=True)
def test_a_ledger_failing_verify_is_refused_unless_unverified(study):
    from tests.ledger.tamper import raw_sql

    entry = study.register(0.01)
    files = study.produce()
    code, line, _ = study.verdict(entry, files, "--unverified")
    assert (code, line) == (0, "#1 confirmed, by the registered plan")  # the twin: it verifies
    raw_sql(str(study.ledger), "UPDATE entry_plans SET plan = replace(plan, '0.01', '0.001')")
    a, b = files
    refused = study.cli("verdict", entry, "--a", a, "--b", b, "--ledger", study.ledger)
    assert refused.code == 2 and "fails `labcoat ledger verify`" in refused.err
    assert len(refused.err.strip().splitlines()) == 1 and refused.out == ""
    code, line, _ = study.verdict(entry, files, "--unverified")
    assert "DEVIATING FROM ITS PLAN" in line and "unverified" in line
