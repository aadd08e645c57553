"""Every random number generator that decides what a run does next: capture and restore.

Global state: Python's ``random``, NumPy's global ``RandomState``, torch's CPU generator and,
once CUDA is initialised, every CUDA device's. User generators (``numpy.random.Generator``,
``RandomState``, ``torch.Generator``, ``random.Random``) are handed over by name.

DataLoader workers' RNGs live in other processes: :mod:`labcoat.replay.workers` brings their
states back with every batch, so a checkpoint holds them without reseeding anything.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Mapping

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
