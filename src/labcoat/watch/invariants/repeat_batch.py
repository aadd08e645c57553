"""``repeat_batch``: the same input batch comes back within a few steps.

The classic cause is DataLoader workers that yield the same data: a random generator created
in the dataset's ``__init__`` is copied into every forked worker with the same state, or an
``IterableDataset`` that does not split itself by ``get_worker_info()`` is yielded in full by
every worker. Either way each batch arrives once per worker, a few steps apart.

Data that legitimately comes back is left alone: a loop that cycles through the same batches
(one batch overfitted on purpose, full-batch training, ``shuffle=False`` epochs shorter than
the window) repeats with a constant gap, so a repeat that continues the previous step's gap
is not counted; only a repeat that starts afresh is. Batches made once and shuffled each
epoch (a precomputed batch sampler, bucketed batches) come back at gaps that change every
time, but once the first epoch is over no new batch arrives; workers yielding the same data
keep bringing new batches between the repeats. So a repeat counts only once a batch never seen
before follows it ("never seen" within the last :data:`KNOWN_PER_WINDOW` windows of distinct
batches, so a pool shuffled each epoch is remembered across epochs). An alert needs
``min_repeats`` such repeats within the last ``window`` batches, so one chance repeat (a batch
of one item at an epoch boundary) is not enough. Only batches passed as
``observe(..., batch=...)`` are judged.
"""

from __future__ import annotations

from collections import deque

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext

#: distinct batches remembered to tell a new batch from one that came back, per `window`
KNOWN_PER_WINDOW = 64


@INVARIANTS.register
class RepeatBatch(Invariant):
    kind = "repeat_batch"
    falsifies = "each step trains on new data"
    predicts = (
        "fewer than `min_repeats` batches within `window` steps repeat an earlier one, other "
        "than by cycling through the same batches"
    )
    needs = frozenset({"batches"})
    options = {"window": (32, Bound(int, 2)), "min_repeats": (2, Bound(int, 1))}

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("recent", deque())  # (observe index, step, fingerprint), oldest first
        self.add_state("last_seen", {})  # fingerprint -> (observe index, step) of its latest use
        self.add_state("previous_gap", None)  # gap of the previous batch's repeat, if it was one
        self.add_state("fresh", deque())  # (observe index, step, earlier step) of fresh repeats
        self.add_state("unconfirmed", deque())  # fresh repeats no new batch has followed yet
        self.add_state("known", {})  # fingerprints seen, oldest first (bounded, see above)
        self.add_state("found", None)
        self.add_state("judged", 0)

    def idle_reason(self) -> str | None:
        return None if self.judged else "no batch was passed to observe(..., batch=...)"

    def update(self, sample: Sample) -> None:
        for index, step, key in sample.batches:
            while self.recent and self.recent[0][0] <= index - self.window:
                old_index, _, old_key = self.recent.popleft()
                if self.last_seen.get(old_key, (None,))[0] == old_index:
                    del self.last_seen[old_key]
            for repeats in (self.fresh, self.unconfirmed):
                while repeats and repeats[0][0] <= index - self.window:
                    repeats.popleft()
            before = self.last_seen.get(key)
            gap = None if before is None else index - before[0]
            if key in self.known:
                del self.known[key]  # re-inserted below as the latest
            else:  # a new batch: the stream still brings new data between repeats
                self.fresh.extend(self.unconfirmed)
                self.unconfirmed.clear()
            self.known[key] = True
            if len(self.known) > KNOWN_PER_WINDOW * self.window:
                del self.known[next(iter(self.known))]
            if gap is not None and gap != self.previous_gap:
                self.unconfirmed.append((index, step, before[1]))
            self.previous_gap = gap
            self.recent.append((index, step, key))
            self.last_seen[key] = (index, step)
            self.judged += 1
        if not sample.batches:
            return
        if len(self.fresh) >= self.min_repeats:
            index, step, earlier = self.fresh[-1]
            self.found = Violation(
                subject="batches",
                message=(
                    f"the batch at step {step} is the one already trained on at step {earlier}; "
                    f"{len(self.fresh)} batches in the last {self.window} repeat an earlier one. "
                    "Do DataLoader workers yield the same data (a random generator copied into "
                    "each worker, or an IterableDataset not split by get_worker_info())?"
                ),
                value=float(len(self.fresh)),
                evidence={
                    "repeats": [[s, e] for _, s, e in self.fresh][:50],
                    "window": self.window,
                },
            )
        else:
            self.found = None

    def load_state_dict(self, state) -> None:
        # checkpoints from before these two
        super().load_state_dict({"unconfirmed": deque(), "known": {}, **state})

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]
