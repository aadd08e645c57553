"""Every random number generator that decides what a run does next: capture and restore.

Global state: Python's ``random``, NumPy's global ``RandomState``, torch's CPU generator and,
once CUDA is initialised, every CUDA device's. User generators (``numpy.random.Generator``,
``RandomState``, ``torch.Generator``, ``random.Random``) are handed over by name.

DataLoader workers: a worker process's RNGs are seeded once, when it starts, and then advance
with every item it loads, so a batch's augmentation depends on every batch that worker loaded
before. That makes skipping batches impossible to do exactly. Under ``labcoat.record`` a
map-style DataLoader therefore reseeds the dataset's RNGs (``random``, NumPy's global state,
torch's) for each batch from the epoch's seed and the batch's index (:class:`SeededDataset`,
fed by :class:`~labcoat.replay.loops.RecordedSampler`): a batch's augmentation depends only on
the epoch's seed and its position, not on which worker loaded it or on the batches skipped. In
the main process (``num_workers=0``) the training RNGs are put back after each batch, so the
augmentation draws no numbers from the training's stream.
"""

from __future__ import annotations

import random
import sys
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from labcoat.errors import InputError


def capture_global() -> dict[str, Any]:
    """The global RNGs' states now (NumPy's and torch's only when they are imported)."""
    state: dict[str, Any] = {"python": random.getstate()}
    np = sys.modules.get("numpy")
    if np is not None:
        state["numpy"] = np.random.get_state()
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            state["cuda"] = cuda.get_rng_state_all()
    return state


def restore_global(state: Mapping[str, Any]) -> None:
    """Put back what :func:`capture_global` returned."""
    random.setstate(state["python"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])
    if "torch" in state:
        import torch

        torch.set_rng_state(state["torch"])
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])


def generator_state(gen: Any, name: str = "generator") -> Any:
    """The state of one user generator."""
    if isinstance(gen, random.Random):
        return ("random", gen.getstate())
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(gen, np.random.Generator):
            return ("numpy.Generator", gen.bit_generator.state)
        if isinstance(gen, np.random.RandomState):
            return ("numpy.RandomState", gen.get_state())
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(gen, torch.Generator):
        return ("torch.Generator", gen.get_state())
    raise InputError(
        f"generators[{name!r}]: expected a numpy.random.Generator, a RandomState, a "
        f"torch.Generator or a random.Random; got {type(gen).__name__}"
    )


def set_generator_state(gen: Any, state: Any) -> None:
    kind, value = state
    if kind == "random":
        gen.setstate(value)
    elif kind == "numpy.Generator":
        gen.bit_generator.state = value
    elif kind == "numpy.RandomState":
        gen.set_state(value)
    else:
        gen.set_state(value)


def capture(generators: Mapping[str, Any]) -> dict[str, Any]:
    """Global RNGs plus the named user generators."""
    return {
        "global": capture_global(),
        "generators": {k: generator_state(g, k) for k, g in generators.items()},
    }


def restore(state: Mapping[str, Any], generators: Mapping[str, Any]) -> None:
    restore_global(state["global"])
    for name, value in state.get("generators", {}).items():
        if name in generators:
            set_generator_state(generators[name], value)


def loader_generators(iterable: Any) -> dict[str, Any]:
    """A DataLoader's own generators (its ``generator``, its sampler's and its batch sampler's
    sampler's: accelerate seeds that one), by role."""
    found: dict[str, Any] = {}
    batch_sampler = getattr(iterable, "batch_sampler", None)
    for role, owner in (
        ("loader", iterable),
        ("sampler", getattr(iterable, "sampler", None)),
        ("batch_sampler", getattr(batch_sampler, "sampler", None)),
    ):
        gen = getattr(owner, "generator", None)
        if gen is not None and all(gen is not g for g in found.values()):
            found[role] = gen
    return found


def mix(seed: int, index: int) -> int:
    """A 63-bit seed for batch ``index`` of an epoch whose seed is ``seed`` (splitmix64)."""
    z = (seed + 0x9E3779B97F4A7C15 * (index + 1)) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) >> 1


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed ``random``, NumPy's global state and torch's CPU generator for one batch; in the
    main process, put the training's states back afterwards."""
    import torch
    from torch.utils.data import get_worker_info

    np = sys.modules.get("numpy")
    in_worker = get_worker_info() is not None
    saved = None if in_worker else capture_global()
    random.seed(seed)
    if np is not None:
        np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    try:
        yield
    finally:
        if saved is not None:
            restore_global(saved)


class SeededBatch(list):
    """A batch's indices carrying the seed its items are drawn with (pickles to workers)."""

    labcoat_seed: int = 0


class SeededIndex(int):
    """One index carrying its seed (a DataLoader with ``batch_size=None``)."""

    labcoat_seed: int = 0


class SeededDataset:
    """A map-style dataset whose items are drawn under their batch's seed (see the module
    docstring); everything else is the wrapped dataset's."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: Any) -> Any:
        seed = getattr(index, "labcoat_seed", None)
        if seed is None:
            return self.dataset[index]
        with seeded(seed):
            return self.dataset[int(index)]

    def __getitems__(self, indices: Any) -> Any:
        seed = getattr(indices, "labcoat_seed", None)
        inner = getattr(self.dataset, "__getitems__", None)
        plain = list(indices)
        if seed is None:
            return inner(plain) if inner else [self.dataset[i] for i in plain]
        with seeded(seed):
            return inner(plain) if inner else [self.dataset[i] for i in plain]

    def __getattr__(self, name: str) -> Any:
        if name == "dataset":  # during unpickling, before __dict__ is filled
            raise AttributeError(name)
        return getattr(self.dataset, name)
