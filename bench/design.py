"""The design engine where the truth is known: simulated worlds of five interventions with seed
noise (two real main effects, one real interaction, the rest null), analysed as a user would.

Prints, for the 2^(5-1) × 2 seeds design: interval coverage over every effect, the family-wise
false-positive rate over the null effects, the power on the real effects (found and stated),
the runs one factor at a time needs for the same power, and the analysis' time per world.
Run: python bench/design.py [--worlds 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import labcoat

FACTORS = {
    "lr": [1e-3, 3e-3],
    "warmup": [0, 500],
    "dropout": [0.0, 0.1],
    "wd": [0.0, 0.01],
    "aug": [False, True],
}
TRUTH = {("lr",): 0.012, ("dropout",): -0.009, ("lr", "warmup"): 0.008}
NOISE = 0.005


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=1000)
    args = parser.parse_args()
    d = labcoat.design(FACTORS, runs=16, seeds=2, noise=NOISE, effect_size=0.008)
    rng = np.random.default_rng(2026)
    covered = total = false_worlds = 0
    found = dict.fromkeys(TRUTH, 0)
    start = time.perf_counter()
    for _ in range(args.worlds):
        shift = rng.normal(0, 0.004, size=d.seeds)
        rows = []
        for run in d.runs:
            code = {f: 1 if run[f] == FACTORS[f][1] else -1 for f in FACTORS}
            y = 0.7 + shift[run["seed"]] + rng.normal(0, NOISE)
            y += sum(s / 2 * np.prod([code[f] for f in e]) for e, s in TRUTH.items())
            rows.append({**run, "metric": y})
        a = d.analyse(rows)
        false = False
        for row, effect in zip(a.effects, d.effects):
            lo, hi = row["ci"]
            covered += lo <= TRUTH.get(effect, 0.0) <= hi
            total += 1
            if row["decision"] == "effect":
                if effect in TRUTH:
                    found[effect] += 1
                else:
                    false = True
        false_worlds += false
    per_world = (time.perf_counter() - start) / args.worlds
    print(f"design: {d.describe()}; {len(d.effects)} planned effects")
    print(f"worlds: {args.worlds}; analysis {per_world * 1e3:.1f} ms per world")
    print(f"coverage of the 95% intervals over every effect: {covered / total:.3f}")
    print(f"family-wise false-positive rate over the 12 null effects: "
          f"{false_worlds / args.worlds:.3f} (alpha {d.alpha})")  # fmt: skip
    for e, n in found.items():
        stated = labcoat.design(
            FACTORS, runs=16, seeds=2, noise=NOISE, effect_size=abs(TRUTH[e])
        ).power[":".join(e)]
        print(f"power on {':'.join(e)} ({TRUTH[e]:+g}): found {n / args.worlds:.3f}, "
              f"stated {stated:.3f}")  # fmt: skip
    o = d.ofat
    print(f"one factor at a time for the same power ({o['power']:.2f}) on main effects of "
          f"0.008: {o['runs']} runs ({o['seeds_per_arm']} seeds x 6 arms) against "
          f"{d.n_runs}: ratio {o['ratio']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
