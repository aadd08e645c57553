"""Verdicts that cannot be laundered: a null world of studies, each on its own SQLite ledger.

In every study the two arms do not differ (80 questions in 8 categories, 0/1 scores, the same
chance per question in both arms). An honest analyst registers a plan, then produces the
results, then asks for the verdict; a p-hacker launders one of three ways:

* revise: peeks at the results (in pandas, or through a verdict, or after a ``labcoat run``
  fingerprinted them), revises the plan (margin 0.05 → 0, α 0.05 → 0.2, two-sided →
  one-sided, or ``items`` down after dropping the categories where A did worst), then copies
  the results files again so that they are newer than the revision;
* re-run: edits B's results after a verdict (10 % of its correct answers become wrong) and
  asks for the verdict twice more (the last one is the one reported);
* late: registers the plan after the results exist (files an hour old; fresh copies of
  results a ``labcoat run`` fingerprinted; fresh copies of results judged under another entry);
* pilot: registers with the results themselves as the "pilot" (the files, or copies of them)
  and a friendlier plan, then judges fresh copies of the same results.

The honest analysts judge once, twice, a new arm against a baseline judged before, or after a
pilot on 20 other questions.

A study is flagged when the verdict it reports names a deviation. Prints, for each kind of
study, how many were flagged (≥ 99 % of the p-hackers' and none of the honest ones are the
bar), how many verdicts said "confirmed", how many exited non-zero by the registered plan,
and the time per study; measured idle, and with CPU-bound processes beside it (--busy).

    python bench/verdicts.py [--studies 2000] [--busy 2]
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

from labcoat import verdicts  # noqa: E402
from labcoat.ledger import Ledger  # noqa: E402

ITEMS, CATEGORIES = 80, 8
HOUR_S = 3600.0
PLAN = verdicts.Plan(
    metric="accuracy",
    column="correct",
    id="qid",
    cluster="category",
    comparison="superiority",
    margin=0.05,
    items=ITEMS,
    sides="two-sided",
)
REVISIONS = {  # what the reviser changes after peeking
    "margin": {"margin": 0.0},
    "alpha": {"alpha": 0.2},
    "sides": {"sides": "one-sided"},
}
PEEKS = ("pandas", "verdict", "run")
LATE = ("old files", "run", "judged")
PILOT = ("the files", "copies")
HONEST = ("once", "twice", "shared baseline", "pilot of other items")
PILOT_ITEMS = 20


def null_arms(rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """Two arms of one null world: per-question chance shared, answers independent."""
    category = [f"c{i % CATEGORIES}" for i in range(ITEMS)]
    chance = 1 / (1 + np.exp(-rng.normal(0.3, 1.0, ITEMS)))
    arms = []
    for _ in range(2):
        correct = (rng.random(ITEMS) < chance).astype(int)
        arms.append(
            [
                {"qid": f"q{i}", "category": category[i], "correct": int(correct[i])}
                for i in range(ITEMS)
            ]
        )
    return arms[0], arms[1]


class Study:
    """One analyst's files and ledger, in a folder of its own."""

    def __init__(self, folder: Path, rng: np.random.Generator):
        self.folder, self.rng = folder, rng
        self.book = Ledger(folder / "ledger.db")
        self.a, self.b = null_arms(rng)
        self.copies = 0

    def write(self, rows: list[dict], name: str, *, age_s: float = 0.0) -> Path:
        path = self.folder / f"{name}{self.copies}.csv"
        self.copies += 1
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        if age_s:
            then = time.time() - age_s
            os.utime(path, (then, then))
        return path

    def produce(self, *, age_s: float = 0.0) -> tuple[Path, Path]:
        return self.write(self.a, "a", age_s=age_s), self.write(self.b, "b", age_s=age_s)

    def copy(self, files: tuple[Path, Path]) -> tuple[Path, Path]:
        """The same results copied again: newer files, the same content."""
        out = []
        for f in files:
            self.copies += 1
            out.append(Path(shutil.copy(f, self.folder / f"copy{self.copies}_{f.name}")))
        return out[0], out[1]

    def register(self, plan=PLAN, title: str = "A beats B", pilot=(None, None)) -> int:
        return verdicts.register(
            self.book, title, predict="A > B", plan=plan, pilot_a=pilot[0], pilot_b=pilot[1]
        ).id

    def verdict(self, entry: int, files: tuple[Path, Path]):
        return verdicts.verdict(self.book, entry, a=files[0], b=files[1])

    def fingerprint_in_a_run(self, files: tuple[Path, Path]) -> None:
        with self.book.run(data=[str(f) for f in files], git=False):
            pass

    def status(self, entry: int) -> str:
        return self.book.plan_status([self.book.entry(entry)])[entry]


def other_pilot(s: Study) -> tuple[Path, Path]:
    """A pilot of the same world on questions the study does not judge."""
    a, b = null_arms(s.rng)
    rename = [{**r, "qid": f"p{r['qid']}"} for r in (*a[:PILOT_ITEMS], *b[:PILOT_ITEMS])]
    return s.write(rename[:PILOT_ITEMS], "pilot_a"), s.write(rename[PILOT_ITEMS:], "pilot_b")


def honest(s: Study, mode: str):
    entry = s.register(pilot=other_pilot(s) if mode == "pilot of other items" else (None, None))
    files = s.produce()
    result = s.verdict(entry, files)
    if mode == "twice":  # the same results judged again
        result = s.verdict(entry, files)
    elif mode == "shared baseline":  # a new arm A against the results of B judged before
        second = s.register(title="A2 beats B")
        s.a = null_arms(s.rng)[0]
        result = s.verdict(second, (s.write(s.a, "a2"), files[1]))
        entry = second
    return entry, result


def revise(s: Study, mode: str):
    peek, change = mode.split(" / ")
    entry = s.register()
    files = s.produce()
    if peek == "verdict":
        s.verdict(entry, files)
    elif peek == "run":
        s.fingerprint_in_a_run(files)
    if change == "items":  # drop the categories where A did worst, and plan fewer items
        gaps = Counter()
        for ra, rb in zip(s.a, s.b):
            gaps[ra["category"]] += ra["correct"] - rb["correct"]
        worst = {c for c, _ in sorted(gaps.items(), key=lambda kv: kv[1])[:2]}
        s.a = [r for r in s.a if r["category"] not in worst]
        s.b = [r for r in s.b if r["category"] not in worst]
        verdicts.revise_plan(s.book, entry, items=len(s.a))
        fresh = s.produce()
    else:
        verdicts.revise_plan(s.book, entry, **REVISIONS[change])
        fresh = s.copy(files)
    return entry, s.verdict(entry, fresh)


def rerun(s: Study, mode: str):
    entry = s.register()
    files = s.produce()
    s.verdict(entry, files)
    ones = [i for i, r in enumerate(s.b) if r["correct"] == 1]
    for i in s.rng.choice(ones, size=max(1, len(ones) // 10), replace=False):
        s.b[i] = {**s.b[i], "correct": 0}
    edited = (files[0], s.write(s.b, "b_edited"))
    s.verdict(entry, edited)
    return entry, s.verdict(entry, edited)  # judged once more: the laundering attempt


def late(s: Study, mode: str):
    if mode == "old files":
        files = s.produce(age_s=HOUR_S)
    elif mode == "run":
        files = s.produce()
        s.fingerprint_in_a_run(files)
        files = s.copy(files)
    else:  # judged under another entry, then registered anew with a friendlier plan
        first = s.register(title="A beats B by 5 points")
        files = s.produce()
        s.verdict(first, files)
        files = s.copy(files)
    entry = s.register(PLAN.revised(margin=0.0, sides="one-sided"), title="A beats B")
    return entry, s.verdict(entry, files)


def pilot(s: Study, mode: str):
    files = s.produce()
    given = files if mode == "the files" else s.copy(files)
    entry = s.register(PLAN.revised(margin=0.0, sides="one-sided"), pilot=given)
    return entry, s.verdict(entry, s.copy(files))


STRATEGIES = {
    "revise": (
        revise,
        [f"{p} / {c}" for p in PEEKS for c in (*REVISIONS, "items")],
    ),
    "re-run": (rerun, ["edit B"]),
    "late": (late, list(LATE)),
    "pilot": (pilot, list(PILOT)),
    "honest": (honest, list(HONEST)),
}


def simulate(studies: int, seed: int = 2026) -> dict:
    """``studies`` honest studies and ``studies`` p-hackers (split evenly over the four
    routes and their variants); per strategy: counts of each outcome."""
    rng = np.random.default_rng(seed)
    plan: list[tuple[str, str]] = []
    routes = ("revise", "re-run", "late", "pilot")
    for k, name in enumerate(routes):
        modes = STRATEGIES[name][1]
        share = studies // len(routes) + (k < studies % len(routes))
        plan += [(name, modes[i % len(modes)]) for i in range(share)]
    plan += [("honest", HONEST[i % len(HONEST)]) for i in range(studies)]
    tally: dict[str, Counter] = {}
    kinds: dict[str, Counter] = {}
    start = time.perf_counter()
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None  # no disk syncs where it can
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-verdicts-", dir=memory) as tmp:
        for i, (name, mode) in enumerate(plan):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            study = Study(folder, rng)
            with study.book:
                entry, result = STRATEGIES[name][0](study, mode)
                t = tally.setdefault(name, Counter())
                t["studies"] += 1
                t["flagged"] += bool(result.deviations)
                t["named in the first line"] += "DEVIATING FROM ITS PLAN" in result.headline
                t["not 'planned' in ledger list"] += study.status(entry) != "planned"
                t["confirmed"] += result.verdict == "confirmed"
                t["exit 0 (confirmed, held by the plan)"] += result.exit_code == 0
                kinds.setdefault(name, Counter()).update({d["kind"] for d in result.deviations})
            shutil.rmtree(folder)
    return {
        "tally": tally,
        "kinds": kinds,
        "per_study_ms": (time.perf_counter() - start) / len(plan) * 1000,
    }


def report(title: str, out: dict) -> None:
    print(f"\n{title} ({out['per_study_ms']:.0f} ms per study)")
    for name, t in out["tally"].items():
        n = t["studies"]
        shown = ", ".join(f"{k} {v} ({v / n:.1%})" for k, v in t.items() if k != "studies")
        print(f"  {name:<7} {n:>5} studies: {shown}")
        if out["kinds"][name]:
            print(f"  {'':<7} deviations named: {dict(out['kinds'][name].most_common())}")
    hackers = [t for name, t in out["tally"].items() if name != "honest"]
    flagged = sum(t["flagged"] for t in hackers)
    total = sum(t["studies"] for t in hackers)
    honest_flags = out["tally"]["honest"]["flagged"]
    print(
        f"  p-hackers flagged {flagged}/{total} = {flagged / total:.2%} (bar: ≥ 99 %); "
        f"honest studies flagged {honest_flags}/{out['tally']['honest']['studies']} (bar: 0)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000, help="honest studies, and p-hackers")
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes for the busy run")
    parser.add_argument("--no-busy", action="store_true", help="only the idle measurement")
    args = parser.parse_args()
    report(f"verdicts null world, idle ({os.cpu_count()} CPUs)", simulate(args.studies))
    if not args.no_busy:
        with cpu_load(args.busy):
            busy = simulate(max(30, args.studies // 10), seed=2027)
        report(f"busy: {args.busy} CPU-bound processes beside it, a tenth of the studies", busy)


if __name__ == "__main__":
    main()
