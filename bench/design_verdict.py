"""The verdict on a registered design where the truth is known, with and without deviations.

The worlds of bench/design.py (five interventions, seed noise 0.005 and a seed shift of sd
0.004, two real main effects and one real interaction, the rest null; the 2^(5-1) × 2 seeds
design), each judged three ways by the sealed plan:

* clean: every planned run, once;
* deviating: one planned run lost, one run repeated with the better of its two results kept,
  and four runs at a third seed the design does not have; the verdict sets the repeat and the
  extras aside and estimates on the 31 planned runs left;
* naive: the same rows analysed as they come (the repeat and the extra seed included).

Prints, for each, the coverage of the 95 % intervals over every effect and the family-wise
false-positive rate over the null effects.
Run: python bench/design_verdict.py [--worlds 400]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

# the world bench/design.py simulates: five factors, two real main effects, one interaction
from design import FACTORS, NOISE, TRUTH  # bench/ is on the path when run

import labcoat
from labcoat.design.judge import judge


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=400)
    args = parser.parse_args()
    d = labcoat.design(FACTORS, runs=16, seeds=2, noise=NOISE, effect_size=0.008)
    plan = d.to_plan("metric")
    rng = np.random.default_rng(7)

    def metric(run, shift):
        code = {f: 1 if run[f] == FACTORS[f][1] else -1 for f in FACTORS}
        y = 0.70 + shift[run["seed"]] + rng.normal(0, NOISE)
        return y + sum(s / 2 * np.prod([code[f] for f in e]) for e, s in TRUTH.items())

    tally = {name: [0, 0, 0] for name in ("clean", "deviating", "naive")}
    start = time.perf_counter()
    for _ in range(args.worlds):
        shift = rng.normal(0, 0.004, size=3)
        rows = [{**r, "metric": metric(r, shift)} for r in d.runs]
        repeat = {**rows[5], "metric": max(rows[5]["metric"], metric(rows[5], shift))}
        extra = [{**r, "seed": 2, "metric": metric({**r, "seed": 2}, shift)} for r in d.runs[:4]]
        deviating = [*rows[1:], repeat, *extra]
        analyses = {
            "clean": judge(plan, rows).analysis,
            "deviating": judge(plan, deviating).analysis,
            "naive": d.analyse(deviating),
        }
        for name, a in analyses.items():
            false = False
            for row, effect in zip(a.effects, d.effects):
                lo, hi = row["ci"]
                tally[name][0] += lo <= TRUTH.get(effect, 0.0) <= hi
                tally[name][1] += 1
                false |= row["decision"] == "effect" and effect not in TRUTH
            tally[name][2] += false
    per_world = (time.perf_counter() - start) / args.worlds
    print(f"design: {d.describe()}; worlds: {args.worlds}; {per_world * 1e3:.0f} ms per world")
    for name, (covered, total, false_worlds) in tally.items():
        print(f"{name:9s}: coverage {covered / total:.3f}, family-wise false positives "
              f"{false_worlds / args.worlds:.3f} (alpha {d.alpha})")  # fmt: skip


if __name__ == "__main__":
    main()
