"""Bring the forms users hand the doctor ((X, y) tensors, a Dataset, a DataLoader, an iterable
of batches) into one: a :class:`Examples` pair of tensors held on the CPU.

The doctor needs fixed examples it can index, slice, shuffle and compare, so it materialises at
most ``limit`` of them; everything after that works on copies of this pair and never touches the
user's loader again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from labcoat.errors import InputError


@dataclass(frozen=True)
class Examples:
    """Inputs ``x`` and targets ``y`` with one row per example, plus where each row came from."""

    x: torch.Tensor
    y: torch.Tensor
    index: torch.Tensor  # position of each row in the data the user passed

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise InputError(
                f"data: inputs and targets disagree on the number of examples "
                f"({len(self.x)} inputs, {len(self.y)} targets); pass one target per input"
            )

    def __len__(self) -> int:
        return len(self.y)

    def take(self, rows: torch.Tensor | np.ndarray | list[int] | slice) -> "Examples":
        if isinstance(rows, slice):
            return Examples(self.x[rows], self.y[rows], self.index[rows])
        rows = torch.as_tensor(rows, dtype=torch.long)
        return Examples(self.x[rows], self.y[rows], self.index[rows])

    def with_targets(self, y: torch.Tensor) -> "Examples":
        return Examples(self.x, y, self.index)

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x, self.y


def to_examples(data: Any, *, name: str = "data", limit: int = 4096) -> Examples:
    """Materialise at most ``limit`` examples of ``data`` as tensors.

    Accepts ``(X, y)`` tensors or arrays, a map-style ``Dataset`` of ``(x, y)`` items, a
    ``DataLoader`` or any iterable of ``(x, y)`` batches.
    """
    if isinstance(data, (tuple, list)) and len(data) == 2 and _is_array(data[0]) and _is_array(data[1]):
        x, y = _as_tensor(data[0], name, "X"), _as_tensor(data[1], name, "y")
        if x.ndim == 0 or y.ndim == 0:
            raise InputError(f"{name}: X and y need one row per example; got shapes {tuple(x.shape)} and {tuple(y.shape)}")
        if len(x) != len(y):
            raise InputError(
                f"{name}: X has {len(x)} rows but y has {len(y)}; each example needs exactly one target"
            )
        n = min(len(x), limit)
        return Examples(x[:n], y[:n], torch.arange(n))
    if isinstance(data, DataLoader):
        return _from_loader(data, name, limit)
    if isinstance(data, Dataset) and hasattr(data, "__len__") and hasattr(data, "__getitem__"):
        return _from_dataset(data, name, limit)
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise InputError(
            f"{name}: expected (X, y) tensors, a torch Dataset, a DataLoader or an iterable of "
            f"(x, y) batches; got {type(data).__name__}"
        )
    return _from_batches(data, name, limit)


def _is_array(obj: Any) -> bool:
    return isinstance(obj, (torch.Tensor, np.ndarray))


def _as_tensor(obj: Any, name: str, what: str) -> torch.Tensor:
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    arr = np.asarray(obj)
    if arr.dtype == object:
        raise InputError(f"{name}: {what} has dtype object; pass a numeric array or tensor")
    if arr.ndim == 0:  # a scalar label (int, np.int64): np.ascontiguousarray would make it shape (1,)
        return torch.from_numpy(arr.reshape(1)).reshape(())
    return torch.from_numpy(np.ascontiguousarray(arr))


def _split_pair(item: Any, name: str, where: str) -> tuple[Any, Any]:
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    kind = type(item).__name__
    size = f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""
    raise InputError(f"{name}: {where} must be an (x, y) pair; got a {kind}{size}")


def _from_dataset(data: Dataset, name: str, limit: int) -> Examples:
    n = min(len(data), limit)  # type: ignore[arg-type]
    if n == 0:
        raise InputError(f"{name}: the dataset is empty")
    xs, ys = [], []
    for i in range(n):
        x, y = _split_pair(data[i], name, f"item {i}")
        xs.append(_as_tensor(x, name, f"x of item {i}"))
        ys.append(_as_tensor(y, name, f"y of item {i}"))
    return Examples(_stack(xs, name, "x"), _stack(ys, name, "y"), torch.arange(n))


def _from_loader(loader: DataLoader, name: str, limit: int) -> Examples:
    """A loader's batches, each row indexed by its position in ``loader.dataset``.

    Rows in the order a shuffling loader yields them would point nowhere in the user's data,
    so a map-style loader is read the way it reads itself in one process: the indices its
    batch sampler draws, fetched from its dataset and put together by its collate_fn.
    """
    dataset, sampler = loader.dataset, loader.batch_sampler
    if sampler is None or not hasattr(dataset, "__getitem__") or isinstance(dataset, torch.utils.data.IterableDataset):
        return _from_batches(loader, name, limit)
    fetch = getattr(dataset, "__getitems__", None) or (lambda rows: [dataset[i] for i in rows])
    indices: list[int] = []

    def batches() -> Iterable[Any]:
        for rows in sampler:
            rows = list(rows)
            indices.extend(int(i) for i in rows)
            yield loader.collate_fn(fetch(rows))

    examples = _from_batches(batches(), name, limit)
    return Examples(examples.x, examples.y, torch.tensor(indices[: len(examples)], dtype=torch.long))


def _from_batches(batches: Iterable[Any], name: str, limit: int) -> Examples:
    xs, ys, n = [], [], 0
    for b, item in enumerate(batches):
        x, y = _split_pair(item, name, f"batch {b}")
        x, y = _as_tensor(x, name, f"x of batch {b}"), _as_tensor(y, name, f"y of batch {b}")
        if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
            raise InputError(
                f"{name}: batch {b} has x of shape {tuple(x.shape)} and y of shape {tuple(y.shape)}; "
                "batches need a leading batch dimension shared by x and y"
            )
        xs.append(x)
        ys.append(y)
        n += len(y)
        if n >= limit:
            break
    if not xs:
        raise InputError(f"{name}: the iterable yielded no batches")
    x, y = _cat(xs, name, "x")[:limit], _cat(ys, name, "y")[:limit]
    return Examples(x, y, torch.arange(len(y)))


def _stack(items: list[torch.Tensor], name: str, what: str) -> torch.Tensor:
    shapes = {tuple(t.shape) for t in items}
    if len(shapes) > 1:
        raise InputError(f"{name}: {what} differs in shape across items ({sorted(shapes)[:3]}…); pad or resize to one shape")
    return torch.stack(items)


def _cat(items: list[torch.Tensor], name: str, what: str) -> torch.Tensor:
    shapes = {tuple(t.shape[1:]) for t in items}
    if len(shapes) > 1:
        raise InputError(f"{name}: {what} differs in shape across batches ({sorted(shapes)[:3]}…); pad to one shape")
    return torch.cat(items)


def split_off(examples: Examples, fraction: float, seed: int) -> tuple[Examples, Examples]:
    """Split a held-out part off ``examples`` at random (stratified by class for integer targets)."""
    n = len(examples)
    if n < 4:
        raise InputError(f"data: need at least 4 examples to hold some out for validation; got {n}")
    rng = np.random.default_rng(seed)
    y = examples.y
    if y.ndim == 1 and not torch.is_floating_point(y):
        labels = y.numpy()
        val_rows: list[int] = []
        for label in np.unique(labels):
            rows = rng.permutation(np.flatnonzero(labels == label))
            k = int(round(len(rows) * fraction))
            val_rows.extend(rows[:k].tolist())
        mask = np.zeros(n, dtype=bool)
        mask[val_rows] = True
    else:
        mask = np.zeros(n, dtype=bool)
        mask[rng.permutation(n)[: max(1, int(round(n * fraction)))]] = True
    if mask.all() or not mask.any():
        mask[:] = False
        mask[rng.permutation(n)[: max(1, n // 5)]] = True
    val = np.flatnonzero(mask)
    train = np.flatnonzero(~mask)
    return examples.take(rng.permutation(train)), examples.take(val)
