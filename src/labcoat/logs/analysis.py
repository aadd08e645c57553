"""Noise and signal: which lines of a run indicate its failure, read in one pass in time order.

* **Background.** A template the project's earlier healthy runs wrote (the ledger holds their
  templates) is background, whatever it says: a library's harmless ERROR line every run prints
  is not this run's failure.
* **Candidates.** A line of a new template that is an error (level ERROR or worse, a traceback's
  exception), a timeout, an out-of-memory or a non-finite value.
* **Causes and consequences.** A crash on one rank makes the others time out or lose their peer,
  and the launcher report it: those lines are consequences. The first line is the earliest
  candidate that is not such a loss of a peer (a rank's own error); when every candidate is
  one, a rank that went silent before them is the cause (it hung, the others waited), else
  the earliest of them.
* **Silent ranks.** A rank whose last line came long before the run's end (against its own
  pace) while the others went on to fail.
* **Changes.** The step from which one rank lags the others (it slowed while they did not).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from labcoat.logs import classify

STRONG = ("exception", "error", "timeout", "oom", "nonfinite")
#: seconds of silence before a rank can count as silent, at least
MIN_SILENCE_S = 3.0
#: steps on each side of a rate change, at least
MIN_STEPS = 5
#: candidates and consequences kept (the first ones in time)
KEEP = 200


@dataclass
class Candidate:
    seq: int
    time: float | None
    rank: int | None
    node: str | None
    step: int | None
    level: str
    text: str
    template: str
    kinds: tuple[str, ...]

    @property
    def peer_loss(self) -> bool:
        return self.rank is None or classify.is_peer_loss(self.text)

    @property
    def what(self) -> str:
        """The strongest signal, in words."""
        for kind, words in (
            ("oom", "an out-of-memory"),
            ("nonfinite", "a non-finite value"),
            ("timeout", "a timeout"),
            ("exception", "an exception"),
            ("error", "an error"),
        ):
            if kind in self.kinds:
                return words
        return "a signal"


@dataclass
class RankState:
    lines: int = 0
    first_time: float | None = None
    last_time: float | None = None
    last_step: int | None = None
    last_seq: int = 0
    last_text: str = ""
    node: str | None = None
    last_kinds: tuple[str, ...] = ()
    gaps: list[float] = field(default_factory=list)  # gaps between its lines in training
    early: list[float] = field(default_factory=list)  # gaps between lines of no known step
    stepped: bool = False  # its last line had a step
    step_times: dict[int, float] = field(default_factory=dict)  # step -> first line's time
    step_lines: dict[int, tuple[int, str]] = field(default_factory=dict)  # step -> (seq, text)


@dataclass
class Analysis:
    lines: int
    ranks: list[int]
    templates: int
    candidates: list[Candidate]
    first: dict[str, Any] | None
    consequences: list[dict[str, Any]]
    silent: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    new_templates: list[dict[str, Any]]
    background: int  # templates known from earlier healthy runs (0: no history)
    history_runs: int
    timed: bool
    per_rank: dict[Any, dict[str, Any]] = field(default_factory=dict)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def analyse(
    rows: Iterable[Mapping[str, Any]],
    templates: Mapping[int, Mapping[str, Any]],
    background: Mapping[str, set[str]],
    *,
    history_runs: int = 0,
    last_steps: Mapping[Any, int] | None = None,
    min_silence_s: float = MIN_SILENCE_S,
) -> Analysis:
    """One pass over a run's rows (``log_lines``, in seq order) with its templates
    (id -> {template, count, ranks, level}) against the ``background`` (template text -> the
    signals its lines showed in earlier healthy runs). ``last_steps``: rank -> the last step its
    processes were in (from their step markers)."""
    ranks: dict[int | None, RankState] = {}
    candidates: list[Candidate] = []
    n = 0
    timed = True
    for row in rows:
        n += 1
        rank, when, step, kinds = row["rank"], row["time"], row["step"], row["kinds"]
        timed = timed and when is not None
        state = ranks.get(rank)
        if state is None:
            state = ranks[rank] = RankState()
        if when is not None and state.last_time is not None and len(state.gaps) < 50_000:
            # its pace while it trains: gaps between lines of known steps (not the start-up)
            if step is not None and state.stepped:
                state.gaps.append(when - state.last_time)
            elif step is None and not state.stepped:
                state.early.append(when - state.last_time)
        state.stepped = step is not None
        state.lines += 1
        if state.first_time is None:
            state.first_time = when
        state.last_time, state.last_seq, state.last_text = when, row["seq"], row["text"]
        state.node = row["node"] or state.node
        if step is not None:
            state.last_step = step
            if step not in state.step_times and len(state.step_times) < 200_000:
                state.step_times[step] = when
                state.step_lines[step] = (row["seq"], row["text"])
        found = tuple(kinds.split(",")) if kinds else ()
        state.last_kinds = found
        if not found or "traceback" in found:
            continue
        template = templates.get(row["template_id"], {}).get("template", "")
        known = background.get(template, ())
        strong = tuple(k for k in found if k in STRONG and k not in known)
        if not strong or len(candidates) >= KEEP:
            continue
        candidates.append(
            Candidate(
                row["seq"],
                when,
                rank,
                row["node"],
                step,
                row["level"] or "",
                row["text"],
                template,
                strong,
            )
        )
    worker = {r: s for r, s in ranks.items() if r is not None}
    for r, told in (last_steps or {}).items():
        if r in worker and (worker[r].last_step is None or told > worker[r].last_step):
            worker[r].last_step = told
    silent = _silent(worker, candidates, min_silence_s) if timed else []
    changes = _changes(worker) if timed else []
    first, cause = _first(candidates, silent, changes, worker)
    consequences = _consequences(candidates, cause, first, timed)
    new = [
        {
            "template": t["template"],
            "count": t["count"],
            "level": t.get("level"),
            "ranks": t.get("ranks", []),
        }
        for t in templates.values()
        if t["template"] and t["template"] not in background
    ]
    return Analysis(
        lines=n,
        ranks=sorted(worker),
        templates=len(templates),
        candidates=candidates,
        first=first,
        consequences=consequences,
        silent=silent,
        changes=changes,
        new_templates=new if background else [],
        background=len(background),
        history_runs=history_runs,
        timed=timed,
        per_rank={
            r: {
                "lines": s.lines,
                "first_time": s.first_time,
                "last_time": s.last_time,
                "last_step": s.last_step,
                "steps": len(s.step_times),
            }
            for r, s in ranks.items()
        },
    )


def _silent(
    ranks: dict[int, RankState], candidates: list[Candidate], min_silence_s: float
) -> list[dict[str, Any]]:
    """Ranks that stopped writing while the others went on to report trouble."""
    if len(ranks) < 2:
        return []
    end = max(s.last_time for s in ranks.values() if s.last_time is not None)
    out = []
    for rank, s in sorted(ranks.items()):
        if s.last_time is None or any(k in s.last_kinds for k in ("exception", "traceback")):
            continue  # it crashed: that is its own last word, not silence
        gap = end - s.last_time
        pace = _pct(s.gaps[-1000:] if len(s.gaps) >= 10 else s.gaps + s.early, 0.9)
        if gap < max(min_silence_s, 10 * pace):
            continue
        after = [
            c for c in candidates if c.rank != rank and c.time is not None and c.time > s.last_time
        ]
        if not after:
            continue  # the others finished quietly: a rank that ended early is no failure
        out.append(
            {
                "rank": rank,
                "last_time": s.last_time,
                "last_step": s.last_step,
                "silent_s": round(gap, 3),
                "seq": s.last_seq,
                "pace_s": round(pace, 4),
            }
        )
    return out


def _changes(ranks: dict[int, RankState]) -> list[dict[str, Any]]:
    """The step from which one rank's lines come later than the other ranks' for the same step,
    by more than the run's noise and a real share of a step."""
    if len(ranks) < 2:
        return []
    steps = sorted(set.intersection(*(set(s.step_times) for s in ranks.values())))
    if len(steps) < 2 * MIN_STEPS:
        return []
    steps = steps[:: max(1, len(steps) // 400)]  # a few hundred points decide a change
    out = []
    for rank, s in sorted(ranks.items()):
        lags = []
        for step in steps:
            others = [o.step_times[step] for r, o in ranks.items() if r != rank]
            lags.append(s.step_times[step] - statistics.median(others))
        durations = [b - a for a, b in zip(_times(s, steps), _times(s, steps)[1:])]
        k = _split(lags)
        if k is None:
            continue
        before, after = lags[:k], lags[k:]
        jump = statistics.median(after) - statistics.median(before)
        spread = statistics.median(abs(x - statistics.median(before)) for x in before) * 1.4826
        step_s = statistics.median(durations[: k - 1]) if k > 1 else 0.0
        threshold = max(0.1, 6 * spread, 0.5 * step_s)
        level = statistics.median(before) + threshold
        sustained = sum(x > level for x in after) / len(after)
        if jump < threshold or sustained < 0.8:
            continue
        step = steps[k]
        out.append(
            {
                "rank": rank,
                "step": step,
                "what": f"rank {rank} lags the other ranks by {statistics.median(after):.3f} s "
                f"per step from step {step} ({statistics.median(before):.3f} s before; a step "
                f"took {step_s:.3f} s)",
                "lag_before_s": round(statistics.median(before), 4),
                "lag_after_s": round(statistics.median(after), 4),
                "seq": s.step_lines[step][0],
                "line": s.step_lines[step][1],
                "time": s.step_times[step],
            }
        )
    return out


def _split(values: list[float]) -> int | None:
    """The index that splits ``values`` into two segments of least squared error (each at
    least :data:`MIN_STEPS` long), as a single change-point fit does; None when too short."""
    n = len(values)
    if n < 2 * MIN_STEPS:
        return None
    total, total_sq = sum(values), sum(v * v for v in values)
    best, best_k, left, left_sq = None, None, 0.0, 0.0
    for k in range(1, n - MIN_STEPS + 1):
        left += values[k - 1]
        left_sq += values[k - 1] ** 2
        if k < MIN_STEPS:
            continue
        right, right_sq = total - left, total_sq - left_sq
        sse = (left_sq - left * left / k) + (right_sq - right * right / (n - k))
        if best is None or sse < best:
            best, best_k = sse, k
    return best_k


def _times(s: RankState, steps: list[int]) -> list[float]:
    return [s.step_times[x] for x in steps]


def _as_first(c: Candidate, why: str) -> dict[str, Any]:
    return {
        "rank": c.rank,
        "node": c.node,
        "step": c.step,
        "time": c.time,
        "line": c.text,
        "template": c.template,
        "kinds": list(c.kinds),
        "why": why,
        "seq": c.seq,
    }


def _first(
    candidates: list[Candidate],
    silent: list[dict[str, Any]],
    changes: list[dict[str, Any]],
    ranks: dict[int, RankState],
) -> tuple[dict[str, Any] | None, Candidate | None]:
    own = [c for c in candidates if not c.peer_loss]
    if own:
        c = own[0]
        later = len({x.rank for x in candidates if x.rank != c.rank and x.seq > c.seq})
        why = f"{c.what} on rank {c.rank}" + (
            f", before anything on the other ranks ({later} reported trouble after it)"
            if later
            else ""
        )
        return _as_first(c, why), c
    if candidates:
        first_loss = candidates[0]
        quiet = [s for s in silent if first_loss.time is None or s["last_time"] < first_loss.time]
        if quiet:
            s = quiet[0]
            text = ranks[s["rank"]].last_text
            return {
                "rank": s["rank"],
                "node": ranks[s["rank"]].node,
                "step": s["last_step"],
                "time": s["last_time"],
                "line": text,
                "template": "",
                "kinds": ["silent"],
                "why": f"rank {s['rank']} went silent in step {s['last_step']} (its last line "
                f"{s['silent_s']:.1f} s before the run ended); the others then reported "
                f"{first_loss.what} waiting for it",
                "seq": s["seq"],
            }, None
        c = first_loss
        return _as_first(c, f"{c.what} on rank {c.rank}; no rank raised an error of its own"), c
    if changes:
        ch = changes[0]
        return {
            "rank": ch["rank"],
            "node": ranks[ch["rank"]].node,
            "step": ch["step"],
            "time": ch["time"],
            "line": ch["line"],
            "template": "",
            "kinds": ["slowed"],
            "why": ch["what"],
            "seq": ch["seq"],
        }, None
    return None, None


def _consequences(
    candidates: list[Candidate],
    cause: Candidate | None,
    first: dict[str, Any] | None,
    timed: bool = True,
) -> list[dict[str, Any]]:
    """What followed the first line on other ranks and the launcher (without times, files read
    rank by rank: every other rank's lost peers)."""
    if first is None:
        return []
    out, seen = [], set()
    for c in candidates:
        if c.rank == first["rank"] or (c.seq <= first["seq"] if timed else not c.peer_loss):
            continue
        key = (c.rank, c.template)
        if key in seen:
            continue
        seen.add(key)
        who = "the launcher" if c.rank is None else f"rank {c.rank}"
        dt = "" if c.time is None or first["time"] is None else f" {c.time - first['time']:.2f} s"
        because = (
            f"{who} reported {c.what}{dt} after rank {first['rank']}'s "
            f"{'silence' if cause is None and 'silent' in first['kinds'] else 'failure'}"
            + (" (a peer it waited for went away)" if c.peer_loss and c.rank is not None else "")
        )
        out.append({"rank": c.rank, "step": c.step, "line": c.text, "because": because})
    return out


__all__ = ["Analysis", "Candidate", "analyse"]
