"""The shuffle layer (negative control): nothing may score above chance without real labels.

Copies trained on permuted labels are scored on held-out data with the user's metric. A
shuffled pipeline that beats chance rejects the null that the score measures learning from the
labels (Ojala & Garriga 2010, Test 1): the metric cannot fail, labels reach the model by another
path, or the evaluation reads training labels. The same copies give the real setup's
permutation p-value. For language models, random token sequences are the control: nothing
predicts them better than ln V unless it reads the tokens it is asked to predict.

The copies stop early once both verdicts are settled, as a group-sequential trial stops at an
interim look (Haybittle 1971; Peto et al. 1976): at a few fixed counts of copies, a verdict is
taken as settled only on evidence at the strict level :data:`INTERIM_ALPHA`, so the final
test keeps its level (each look adds at most ``INTERIM_ALPHA`` to it). A permutation p-value
cannot fall below 1/(k + 1) with k copies, so an early pass of ``shuffle.pvalue`` rests on a
normal prediction test instead: the real score must lie so far above the k shuffled ones that
a new draw of theirs would reach it with probability below ``INTERIM_ALPHA``. A healthy setup
whose real score stands dozens of the copies' standard deviations above them stops after a
handful; a close call trains every copy and is judged by the permutation p-value.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from labcoat.doctor.case import Case, held_modules
from labcoat.doctor.cpu import map_copies
from labcoat.doctor.inputs import Examples
from labcoat.doctor.permutation import permutation_pvalue
from labcoat.doctor.registry import check
from labcoat.doctor.targets import (
    Layout,
    aligned,
    best_blind_output,
    best_output,
    conditional_log_probs,
    contexts,
    correct,
    incomparable,
    layout_of,
    lowest_loss,
    marginal_log_probs,
    to_output,
    valid_targets,
)
from labcoat.doctor.training import batch_order, predict, train_copy
from labcoat.findings import Outcome, failed, passed, skipped, warned

#: shuffled copies per run; the real setup's p-value cannot go below 1 / (n + 1)
PERMUTATIONS = {"fast": 19, "full": 99}
#: minibatches each copy trains on, and their size
STEPS = {"fast": 100, "full": 300}
BATCH_SIZE = 32
#: held-out examples scored
VAL_LIMIT = {"fast": 1000, "full": 4000}
MIN_VAL = 20
#: held-out target permutations that set each copy's own chance level
CHANCE_DRAWS = 20
#: "above chance beyond noise": one-sided p below this ...
ALPHA = 0.001
#: ... and shuffled copies recover at least this share of the real setup's gain over chance
#: (copies share one initialisation and one batch order, so they are not independent draws)
MATERIAL = 0.1
#: the real setup should beat its shuffled copies at this level
REAL_ALPHA = 0.05
#: an untrained model this far from chance toward a perfect score is a trained start
#: (fine-tuning): copies on shuffled labels keep that skill and recalibrate it to the label
#: frequencies, so their scoring above chance says nothing about a leak
TRAINED_START = 0.25
#: a start counts as trained only beyond what re-initialised copies of the model score: this
#: many draws of the initialisation (a freshly initialised MLP can line up with simple labels by
#: luck and score above chance; a fine-tuned start stands far above every fresh draw)
REINIT_DRAWS = 8
#: ... and beyond them by this many of their standard deviations
REINIT_SDS = 4.0
#: the real copy "learns its labels" when it fits the rows it trained on this share of the way
#: from chance to a perfect score
LEARNS_LABELS = 0.5
#: ... and "nothing of them carries over" when its held-out score is not even suggestively above
#: its own chance level (its predictions against the held-out targets in random order, this
#: many draws): a p-value above this (a false alarm costs more than a miss: shuffled labels
#: exceed it four times in five)
CARRY_DRAWS = 99
NO_CARRY_OVER = 0.2
RANDOM_SEQUENCES = 256
#: copy counts at which the run may stop early, and the level a verdict must reach there
INTERIM_LOOKS = (4, 6, 8, 12, 16, 24, 32, 48, 64)
INTERIM_ALPHA = 0.001


@dataclass
class Scorer:
    """The score a control compares (higher is better) and what it is called."""

    name: str
    fn: Callable[[torch.Tensor, torch.Tensor], float]
    chance_name: str


def scorer(case: Case, layout: Layout) -> Scorer:
    if case.metric is not None:
        return Scorer(
            "metric", lambda out, y: float(case.metric(out, y)), "an input-blind prediction's score"
        )
    if layout.task == "classification":

        def accuracy(out: torch.Tensor, y: torch.Tensor) -> float:
            valid = valid_targets(y, layout)
            return float(correct(out, y, layout)[valid].double().mean())

        return Scorer("accuracy", accuracy, "majority class rate")

    def negative_loss(out: torch.Tensor, y: torch.Tensor) -> float:
        with torch.no_grad():
            return -float(case.loss_fn(out.to(case.device), y.to(case.device)))

    return Scorer("negative loss", negative_loss, "loss of predicting the marginal")


@dataclass
class ShuffleRuns:
    """Held-out scores of the real setup and of copies trained on shuffled labels."""

    scorer: str
    real: float
    null: np.ndarray  # one score per shuffled copy
    chance: np.ndarray  # each shuffled copy's score against permuted held-out targets
    perfect: float  # score of a perfect prediction
    blind: float  # score of the best prediction that ignores the inputs
    chance_name: str
    steps: int
    batch_size: int
    val_examples: int
    diverged: int
    #: the untrained model's score, and how far it lies above its own chance level: every copy
    #: starts from it, and a random initialisation can line up with simple labels by luck
    untrained: float = float("nan")
    untrained_excess: float = 0.0
    #: copies the effort allows; fewer ran when the verdicts were settled early
    planned: int = 0
    #: the real copy's score on the training rows it learned from, and their chance level
    real_train: float = float("nan")
    real_train_chance: float = float("nan")
    #: the untrained scores' excess over chance of re-initialised copies of the model (empty
    #: when the model has nothing to re-initialise)
    reinit_excess: tuple[float, ...] = ()
    #: one-sided p-value that the real copy's held-out score is above its own chance level
    real_above_chance_pvalue: float = float("nan")

    @property
    def stopped_early(self) -> bool:
        return 0 < len(self.null) < self.planned

    @property
    def trained_start(self) -> bool:
        """True when the untrained model is already a good part of the way to a perfect score,
        beyond every re-initialised copy of it: a random initialisation that lines up with
        simple labels by luck is no trained start."""
        span = self.perfect - float(np.mean(self.chance))
        if not (span > 0 and self.untrained_excess >= TRAINED_START * span):
            return False
        fresh = np.array(self.reinit_excess, dtype=float)
        if len(fresh) < 2:
            return True
        sd = float(np.std(fresh, ddof=1))
        beyond = self.untrained_excess - float(np.mean(fresh))
        return self.untrained_excess > float(fresh.max()) and beyond > REINIT_SDS * sd

    @property
    def learns_its_labels(self) -> bool:
        """The real copy fitted the training rows it learned from a material way toward a
        perfect score: the setup can learn, so a held-out score at the shuffled copies' level
        says its labels carry nothing over to new inputs."""
        span = self.perfect - self.real_train_chance
        fitted = self.real_train - self.real_train_chance
        return bool(span > 0 and fitted >= LEARNS_LABELS * span)

    @property
    def _carried(self) -> float:
        """What the copies may keep from their shared start without seeing a label (never below
        0)."""
        return max(self.untrained_excess, 0.0)

    @property
    def p_above_chance(self) -> float:
        """One-sided p-value that the shuffled copies score above their chance levels on average,
        by more than the untrained model they all start from already does."""
        from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

        excess = self.null - self.chance - self._carried
        if len(excess) < 2 or np.ptp(excess) == 0:
            return 0.0 if float(np.mean(excess)) > 0 else 1.0
        return float(stats.ttest_1samp(excess, 0.0, alternative="greater").pvalue)

    @property
    def share_of_real_gain(self) -> float:
        """How much of the real setup's gain over chance the shuffled copies reach."""
        chance = float(np.mean(self.chance)) + self._carried
        return (
            (float(np.mean(self.null)) - chance) / (self.real - chance)
            if self.real > chance
            else float("inf")
        )

    @property
    def beats_chance(self) -> bool:
        """Above chance beyond noise, by a material share of the real gain, and better than the best
        input-blind prediction: copies that score below that have learned nothing to leak."""
        return (
            self.p_above_chance < ALPHA
            and self.share_of_real_gain >= MATERIAL
            and float(np.mean(self.null)) > self.blind
        )

    @property
    def as_high(self) -> int:
        """Shuffled copies that score at least as high as the real setup."""
        return int(np.sum(self.null >= self.real))

    @property
    def prediction_pvalue(self) -> float:
        """One-sided p of the real score under a normal fitted to the shuffled ones: the chance
        that one more shuffled copy scores as high (a t prediction interval)."""
        from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

        k = len(self.null)
        sd = float(np.std(self.null, ddof=1)) if k > 1 else 0.0
        if k < 3 or not sd > 0 or not math.isfinite(self.real):
            return 1.0
        t = (self.real - float(np.mean(self.null))) / (sd * math.sqrt(1 + 1 / k))
        return float(stats.t.sf(t, k - 1))

    @property
    def settled(self) -> bool:
        """Whether the copies so far settle both verdicts, so that more could not change them
        (see the module docstring). Only clear cases stop: anything unusual (a non-finite score,
        a metric near its perfect value, a trained start) trains every copy."""
        k = len(self.null)
        chance = float(np.mean(self.chance)) if k else math.nan
        tolerance = 1e-6 * max(1.0, abs(self.perfect))
        if (
            k < 3
            or not (np.isfinite(self.null).all() and np.isfinite(self.chance).all())
            or not math.isfinite(self.real)
            or self.perfect - chance <= 10 * tolerance
            or float(np.mean(self.null)) >= self.perfect - 10 * tolerance
            or self.trained_start
        ):
            return False
        if (self.as_high + 1) / (self.planned + 1) > REAL_ALPHA:  # the permutation p cannot pass
            pvalue_settled = True
        else:
            pvalue_settled = self.as_high == 0 and self.prediction_pvalue < INTERIM_ALPHA
        return pvalue_settled and self._labels_settled(chance)

    def _labels_settled(self, chance: float) -> bool:
        """shuffle.labels: the copies' mean excess over chance is bounded, at INTERIM_ALPHA,
        clear of the line between "at chance" and "above it by a material share"."""
        from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

        excess = self.null - self.chance - self._carried
        k = len(excess)
        half = float(stats.t.ppf(1 - INTERIM_ALPHA, k - 1)) * float(np.std(excess, ddof=1))
        half /= math.sqrt(k)
        mean = float(np.mean(excess))
        null_mean = float(np.mean(self.null))
        null_half = float(stats.t.ppf(1 - INTERIM_ALPHA, k - 1)) * float(np.std(self.null, ddof=1))
        null_half /= math.sqrt(k)
        gain = self.real - chance - self._carried
        line = MATERIAL * gain if gain > 0 else 0.0
        at_chance = mean + half < line or null_mean + null_half <= self.blind
        above = mean - half >= line and mean - half > 0 and null_mean - null_half > self.blind
        return at_chance or above

    def evidence(self, **first: float) -> dict:
        """The comparison the verdict rests on first (the rich view shows the first keys)."""
        return {
            "shuffled_mean": float(np.mean(self.null)),
            "chance": self.blind,
            "chance_is": self.chance_name,
            "chance_by_permutation": float(np.mean(self.chance)),
            "untrained_score": self.untrained,
            "untrained_above_chance": self.untrained_excess,
            **first,
            "reinitialised_above_chance": list(self.reinit_excess),
            "real_train_score": self.real_train,
            "real_train_chance": self.real_train_chance,
            "score": self.scorer,
            "perfect_score": self.perfect,
            "real_score": self.real,
            "shuffled_scores": self.null.tolist(),
            "permutations": len(self.null),
            "permutations_planned": self.planned,
            "steps_per_copy": self.steps,
            "batch_size": self.batch_size,
            "val_examples": self.val_examples,
            "diverged_copies": self.diverged,
        }


def _references(
    case: Case, layout: Layout, val: Examples, like: torch.Tensor, score: Scorer
) -> tuple[float, float]:
    """Scores of a perfect prediction and of the best input-blind one (the training marginal)."""
    if not layout.categorical:
        on_device = like.to(case.device)
        perfect = best_output(case.loss_fn, val.y.to(case.device), on_device)
        blind = best_blind_output(case.loss_fn, case.train.y.to(case.device), on_device)
        return score.fn(perfect.to(like.device), val.y), score.fn(blind.to(like.device), val.y)
    scored = aligned(val.y, layout)
    perfect = to_output(
        conditional_log_probs(contexts(val.x, scored, layout), scored, layout), like, layout
    )
    blind = to_output(marginal_log_probs(case.train.y, layout, val.y.shape), like, layout)
    return score.fn(perfect, val.y), score.fn(blind, val.y)


@dataclass
class Shuffling:
    """What every copy of one shuffle run shares: the score, the held-out rows, the batch order
    and the permuted training labels (copy i trains on ``permuted[i]``)."""

    case: Case
    score: Scorer
    val: Examples
    order: list[torch.Tensor]
    permuted: list[torch.Tensor]

    @classmethod
    def of(cls, case: Case) -> "Shuffling":
        n, steps = PERMUTATIONS[case.effort], STEPS[case.effort]
        train = case.train
        order = batch_order(len(train), steps * case.calls_per_update, BATCH_SIZE, case.seed)
        labels = torch.Generator().manual_seed(case.seed + 1)
        permuted = [train.y[torch.randperm(len(train), generator=labels)] for _ in range(n)]
        val = case.val.take(slice(0, VAL_LIMIT[case.effort]))
        return cls(case, scorer(case, layout_of(case)), val, order, permuted)

    def chance_of(
        self, out: torch.Tensor, draws: torch.Generator, y: torch.Tensor | None = None
    ) -> float:
        """The mean score of ``out`` against targets ``y`` (default: the held-out ones) in random
        order."""
        y = self.val.y if y is None else y
        return float(
            np.mean(
                [
                    self.score.fn(out, y[torch.randperm(len(y), generator=draws)])
                    for _ in range(CHANCE_DRAWS)
                ]
            )
        )

    def copy(
        self, i: int, advance: Callable[..., None], *, reset_held: bool = False
    ) -> tuple[float, float, bool]:
        """Copy i's held-out score, its own chance level, and whether it diverged (scored where
        it trained, so only three numbers come back from a worker). ``reset_held``: the step's
        own modules (a teacher) start re-initialised."""
        case = self.case
        run = train_copy(
            case,
            case.train.with_targets(self.permuted[i]),
            order=self.order,
            seed=case.seed,
            advance=advance,
            step_for=lambda setup: case.fresh_step(setup, reset_held=reset_held),
        )
        out = predict(case, run.setup.model, self.val.x)
        draws = torch.Generator().manual_seed(case.seed + 1000 + i)
        return self.score.fn(out, self.val.y), self.chance_of(out, draws), run.diverged


def shuffle_runs(case: Case) -> ShuffleRuns:
    layout = layout_of(case)
    shuffling = Shuffling.of(case)
    score, val, train = shuffling.score, shuffling.val, case.train
    n, steps = len(shuffling.permuted), STEPS[case.effort]
    calls = len(shuffling.order)

    with case.progress.task(f"shuffle: training {n + 1} copies", total=(n + 1) * calls) as advance:
        start = time.perf_counter()
        run = train_copy(case, train, order=shuffling.order, seed=case.seed, advance=advance)
        copy_s = time.perf_counter() - start
        out = predict(case, run.setup.model, val.x)
        real = score.fn(out, val.y)
        perfect, blind = _references(case, layout, val, out, score)
        draws = torch.Generator().manual_seed(case.seed + 6)
        own_chance = np.array(
            [
                score.fn(out, val.y[torch.randperm(len(val), generator=draws)])
                for _ in range(CARRY_DRAWS)
            ]
        )
        real_above_chance = float((1 + np.sum(own_chance >= real)) / (CARRY_DRAWS + 1))
        fit_rows = train.take(slice(0, VAL_LIMIT[case.effort]))
        fit_out = predict(case, run.setup.model, fit_rows.x)
        real_train = score.fn(fit_out, fit_rows.y)
        real_train_chance = shuffling.chance_of(
            fit_out, torch.Generator().manual_seed(case.seed + 5), fit_rows.y
        )
        untrained = predict(case, case.eval_model, val.x)
        untrained_score = score.fn(untrained, val.y)
        untrained_chance = shuffling.chance_of(
            untrained, torch.Generator().manual_seed(case.seed + 4)
        )
        untrained_excess = untrained_score - untrained_chance
        # re-initialised copies only where the start may read as trained (see trained_start)
        maybe_trained = untrained_excess >= TRAINED_START * (perfect - untrained_chance) > 0
        reinit = reinitialised_excess(case, shuffling) if maybe_trained else ()

        def runs(copies: list[tuple[float, float, bool]]) -> ShuffleRuns:
            null, chance, diverged = zip(*copies) if copies else ((), (), ())
            return ShuffleRuns(
                score.name,
                real,
                np.array(null, dtype=float),
                np.array(chance, dtype=float),
                perfect,
                blind,
                score.chance_name,
                steps,
                min(BATCH_SIZE, len(train)),
                len(val),
                int(sum(diverged)),
                untrained_score,
                untrained_excess,
                planned=n,
                real_train=real_train,
                real_train_chance=real_train_chance,
                reinit_excess=reinit,
                real_above_chance_pvalue=real_above_chance,
            )

        copies = map_copies(
            shuffling.copy,
            n,
            copy_s=copy_s,
            advance=advance,
            units=calls,
            looks=INTERIM_LOOKS,
            settled=lambda first: runs(first).settled,
        )
        advance((n - len(copies)) * calls)  # the copies a settled verdict made unnecessary
    return runs(copies)


def reinitialised_excess(case: Case, shuffling: Shuffling) -> tuple[float, ...]:
    """How far above chance untrained copies of the model score on held-out data when their
    layers are drawn again (each module's own ``reset_parameters``, as at construction), one
    per seed: the range a random initialisation reaches by luck. Empty when no module can be
    re-initialised."""
    out = []
    for i in range(REINIT_DRAWS):
        model = case.blueprint.fresh().model
        torch.manual_seed(case.seed + 7919 * (i + 1))
        reset = 0
        with torch.no_grad():
            for module in model.modules():
                if callable(getattr(module, "reset_parameters", None)):
                    module.reset_parameters()
                    reset += 1
        if not reset:
            return ()
        pred = predict(case, model, shuffling.val.x)
        draws = torch.Generator().manual_seed(case.seed + 6 + i)
        out.append(shuffling.score.fn(pred, shuffling.val.y) - shuffling.chance_of(pred, draws))
    return tuple(out)


#: shuffled copies trained again with the step's own modules re-initialised
HELD_ABLATION_COPIES = 4


def through_held_modules(case: Case, r: ShuffleRuns) -> tuple[list[str], ShuffleRuns] | None:
    """When copies on shuffled labels beat chance and the step holds modules besides the model
    (a teacher it distils from): the names of those modules and the shuffled copies trained
    again with them re-initialised, if those copies no longer beat chance. The score then came
    through what those modules learned, not through the labels by another path."""
    if case.step is None:
        return None
    names = sorted(held_modules(case.step, case.blueprint.model))
    if not names:
        return None
    shuffling = Shuffling.of(case)
    k = min(HELD_ABLATION_COPIES, len(shuffling.permuted))
    with case.progress.task(
        f"shuffle: {k} copies without {', '.join(names)}", total=k * len(shuffling.order)
    ) as advance:
        copies = [shuffling.copy(i, advance, reset_held=True) for i in range(k)]
    null, chance, diverged = zip(*copies)
    ablated = replace(
        r,
        null=np.array(null, dtype=float),
        chance=np.array(chance, dtype=float),
        diverged=int(sum(diverged)),
    )
    return None if ablated.beats_chance else (names, ablated)


#: held-out rows outside the majority class that accuracy needs to tell learning from chance: a
#: rare class of 1 % leaves one or two in a held-out fifth of a few hundred rows
MIN_MINORITY_VAL = 10


def _minority_val_rows(case: Case) -> int | None:
    """Held-out targets outside their most frequent class (one class label per row), or None."""
    y = case.val.y
    if case.inferred_task != "classification" or y.reshape(len(y), -1).shape[1] != 1:
        return None
    _, counts = torch.unique(y.reshape(-1), return_counts=True)
    return int(counts.sum() - counts.max())


def _enough_val(case: Case) -> str | None:
    if len(case.val) < MIN_VAL:
        return f"only {len(case.val)} held-out examples; the controls need at least {MIN_VAL}"
    return incomparable(case)


def _next_token(case: Case) -> str | None:
    if case.inferred_task != "sequence":
        return "only for sequence models"
    if case.target_offset is None:
        return "targets are not the input tokens (shifted by one or not)"
    return None


def _labels_not_in_inputs(case: Case) -> str | None:
    if _next_token(case) is None:
        return (
            "next-token targets are the input tokens, so shuffling them leaves every label in the "
            "inputs; shuffle.random_tokens is the negative control here"
        )
    return _enough_val(case)


@check(
    "shuffle.labels",
    layer="shuffle",
    falsifies="the score rewards something other than learning from the labels (a metric that "
    "cannot fail, labels reaching the model another way, an evaluation that reads training labels)",
    predicts="copies trained on shuffled labels score at chance on held-out data, and below a "
    "perfect prediction",
    applies=_labels_not_in_inputs,
)
def shuffled_labels(case: Case) -> Outcome:
    r = case.probe_once("shuffle training", lambda: shuffle_runs(case))
    mean, chance = float(np.mean(r.null)), float(np.mean(r.chance))
    p, share = r.p_above_chance, r.share_of_real_gain
    evidence = r.evidence(pvalue_above_chance=p, share_of_real_gain=share)
    if not np.isfinite(r.null).all():
        return failed(
            f"{int((~np.isfinite(r.null)).sum())} shuffled copies got a non-finite {r.scorer}",
            **evidence,
        )
    tolerance = 1e-6 * max(1.0, abs(r.perfect))
    if r.perfect - chance <= tolerance:
        return failed(
            f"copies trained on shuffled labels score {mean:.3g}, and the {r.scorer} gives "
            f"predictions unrelated to the targets {chance:.3g}, as much as perfect ones ("
            f"{r.perfect:.3g}): it does not compare predictions with targets",
            **evidence,
        )
    if mean >= r.perfect - tolerance:
        return failed(
            f"copies trained on shuffled labels score {mean:.3g}, as high as a perfect prediction",
            **evidence,
        )
    if r.trained_start:
        return skipped(
            f"the untrained model already scores {r.untrained:.3g} (chance {chance:.3g}, perfect "
            f"{r.perfect:.3g}): a trained start, which copies on shuffled labels keep (they score "
            f"{mean:.3g}), so only the {r.scorer} itself was checked: it tells perfect predictions "
            "from unrelated ones",
            **evidence,
        )
    held = through_held_modules(case, r) if r.beats_chance else None
    if held is not None:
        names, ablated = held
        return warned(
            f"copies trained on shuffled labels score {mean:.3g} on held-out data, above chance "
            f"({r.blind:.3g}, {r.chance_name}; p={p:.2g}), and {float(np.mean(ablated.null)):.3g} "
            f"with {', '.join(names)}, held by your step, re-initialised: they learn from what "
            f"{names[0]} learned (distillation); make sure it never saw the held-out rows",
            **evidence,
            held_modules=names,
            without_held_scores=ablated.null.tolist(),
            without_held_pvalue=ablated.p_above_chance,
        )
    if r.beats_chance:
        return failed(
            f"copies trained on shuffled labels score {mean:.3g} on held-out data, above chance ("
            f"{r.blind:.3g}, {r.chance_name}) beyond noise (p={p:.2g}; {share:.0%} of the real "
            f"setup's gain): labels reach the model or the evaluation by another path{_early(r)}",
            **evidence,
        )
    return passed(
        f"copies trained on shuffled labels score {mean:.3g}; chance is {r.blind:.3g} ("
        f"{r.chance_name}){_early(r)}",
        **evidence,
    )


def _early(r: ShuffleRuns) -> str:
    """How many copies ran, when the verdicts were settled before all of them had."""
    return f"; settled after {len(r.null)} of {r.planned} copies" if r.stopped_early else ""


@check(
    "shuffle.pvalue",
    layer="shuffle",
    falsifies="the real setup learns nothing that carries over to held-out data",
    predicts=f"the real setup outscores its shuffled-label copies (permutation p <= {REAL_ALPHA}); "
    "one that fits its training labels yet scores no better than they do on held-out data has "
    "labels unrelated to its inputs",
    applies=_enough_val,
)
def real_pvalue(case: Case) -> Outcome:
    r = case.probe_once("shuffle training", lambda: shuffle_runs(case))
    as_high, k = r.as_high, len(r.null)
    # stopped early with no copy as high: settled by the prediction test (see the module
    # docstring); otherwise the permutation p-value over the copies that ran
    predicted = r.stopped_early and not as_high
    p = r.prediction_pvalue if predicted else permutation_pvalue(r.real, r.null)
    evidence = {
        "pvalue": p,
        "test": "normal prediction" if predicted else "permutation",
        "real_score": r.real,
        "shuffled_as_high": as_high,
        "permutations": k,
        "permutations_planned": r.planned,
        "score": r.scorer,
    }
    if not math.isfinite(r.real):
        return failed(f"the real setup's {r.scorer} on held-out data is {r.real}", **evidence)
    if predicted and p <= REAL_ALPHA:
        sd = float(np.std(r.null, ddof=1))
        above = (r.real - float(np.mean(r.null))) / sd
        return passed(
            f"the real setup scores {r.real:.3g}, {above:.0f} standard deviations above {k} "
            f"shuffled copies: p = {p:.2g} (prediction test; settled after {k} of {r.planned} "
            "copies)",
            real_above_shuffled_sd=above,
            **evidence,
        )
    if p <= REAL_ALPHA:
        beaten = f"all {k}" if not as_high else f"{k - as_high} of {k}"
        return passed(
            f"the real setup scores {r.real:.3g}, above {beaten} shuffled copies: p = {p:.3g}",
            **evidence,
        )
    tie = (
        f"the real setup scores {r.real:.3g}, and {as_high} of {k} shuffled copies score as "
        f"high (p = {p:.3g}{_early(r)})"
    )
    if r.trained_start:
        return warned(
            f"{tie}: {r.steps} steps added nothing measurable to a start that already scores "
            f"{r.untrained:.3g}",
            **evidence,
        )
    if r.beats_chance:
        return warned(
            f"{tie}: the copies score above chance too, so this score cannot show learning (see "
            "shuffle.labels)",
            **evidence,
        )
    if case.targets_ignored:
        return skipped(
            f"{tie}: your train step does not use the targets it is given (see "
            "update.step.targets), so its copies have nothing of them to learn",
            **evidence,
        )
    evidence.update(
        real_train_score=r.real_train,
        real_train_chance=r.real_train_chance,
        real_above_chance_pvalue=r.real_above_chance_pvalue,
    )
    if r.learns_its_labels and r.real_above_chance_pvalue > NO_CARRY_OVER:
        return failed(
            f"{tie}, and no better than chance (p = {r.real_above_chance_pvalue:.2g}), though it "
            f"fits the rows it trained on ({r.scorer} {r.real_train:.3g}, chance "
            f"{r.real_train_chance:.3g}): it learns its labels and nothing of them carries over "
            "to new inputs, as if they were shuffled: are labels aligned with their inputs (a "
            "collate_fn or sampler that reorders one of them, a wrong label file)?",
            **evidence,
        )
    minority = _minority_val_rows(case) if r.scorer == "accuracy" else None
    if minority is not None and minority < MIN_MINORITY_VAL:
        return skipped(
            f"{tie}: the held-out rows hold {minority} outside their majority class, too few for "
            "accuracy to show learning (pass metric=, as an AUC, or more held-out rows)",
            minority_val_rows=minority,
            **evidence,
        )
    return warned(
        f"{tie}: no sign it learns what carries over to held-out data in {r.steps} steps",
        **evidence,
    )


def random_sequences(
    tokens: torch.Tensor, n: int, length: int, gen: torch.Generator, offset: int = 1
) -> Examples:
    """Uniform random token sequences whose targets are the inputs shifted by ``offset`` (as in the
    user's data)."""
    seq = tokens[torch.randint(len(tokens), (n, length + offset), generator=gen)]
    return Examples(seq[:, :length].contiguous(), seq[:, offset:].contiguous(), torch.arange(n))


@check(
    "shuffle.random_tokens",
    layer="shuffle",
    falsifies="a language model reads the tokens it is asked to predict",
    predicts="trained on uniformly random token sequences, a causal model predicts new ones no "
    "better than ln V",
    applies=_next_token,
)
def random_tokens(case: Case) -> Outcome:
    from scipy import stats  # lazy: scipy.stats takes ~0.5 s to import

    layout = layout_of(case)
    y = case.train.y
    tokens = torch.unique(y[valid_targets(y, layout)])
    steps, length = STEPS[case.effort], case.train.x.shape[1]
    gen = torch.Generator().manual_seed(case.seed + 3)
    calls = steps * case.calls_per_update
    pool = random_sequences(tokens, calls * BATCH_SIZE, length, gen, case.target_offset)
    order = [torch.arange(i * BATCH_SIZE, (i + 1) * BATCH_SIZE) for i in range(calls)]
    with case.progress.task("shuffle: training on random tokens", total=calls) as advance:
        run = case.probe_once(
            "random-token training",
            lambda: train_copy(case, pool, order=order, seed=case.seed, advance=advance),
        )
    test = random_sequences(tokens, RANDOM_SEQUENCES, length, gen, case.target_offset)
    out = predict(case, run.setup.model, test.x)
    with torch.no_grad():
        losses = np.array(
            [
                float(
                    case.loss_fn(out[i : i + 1].to(case.device), test.y[i : i + 1].to(case.device))
                )
                for i in range(len(test))
            ]
        )
    uniform = marginal_log_probs(tokens, layout, test.y.shape)
    chance = lowest_loss(case.loss_fn, uniform, test.y, out.to(case.device), layout)
    mean = float(losses.mean())
    p = (
        float(stats.ttest_1samp(losses, chance, alternative="less").pvalue)
        if np.ptp(losses) > 0
        else float(mean >= chance)
    )
    evidence = {
        "loss": mean,
        "chance_loss": chance,
        "tokens": len(tokens),
        "ln_tokens": math.log(len(tokens)),
        "pvalue": p,
        "sequences": len(test),
        "steps": steps,
    }
    if not math.isfinite(mean):
        return failed(f"the loss on random token sequences is {mean}", **evidence)
    if p < ALPHA:
        why = "positions see the tokens they predict"
        if (
            case.target_offset == 0 and layout.shift == 0
        ):  # labels are the inputs and nothing shifts them
            why += (
                ": the targets are the input tokens and the loss scores output t against target "
                "t; shift them by one (y[:, t] = x[:, t + 1])"
            )
        return failed(
            f"after training on random tokens the loss on new ones is {mean:.3f}, below chance ln "
            f"{len(tokens)} = {chance:.3f} (p={p:.2g}): {why}",
            target_offset=case.target_offset,
            loss_shift=layout.shift,
            **evidence,
        )
    return passed(
        f"random token sequences stay unpredictable: loss {mean:.3f} vs chance ln {len(tokens)} = "
        f"{chance:.3f}",
        **evidence,
    )
