"""Bring the forms users hand the doctor ((X, y) tensors, a Dataset, a DataLoader, an iterable
of batches) into one: a :class:`Examples` pair of tensors held on the CPU.

The doctor needs fixed examples it can index, slice, shuffle and compare, so it materialises at
most ``limit`` of them; everything after that works on copies of this pair and never touches the
user's loader again.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

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
    #: how dict batches' input fields were packed into ``x``; None for (x, y) data
    fields: "DictInputs | None" = None
    #: where each batch the data yielded ends, in rows, while the rows are in the order the data
    #: gave them (a loader's or an iterable's batches); None once taken apart or for (X, y) data
    batch_ends: tuple[int, ...] | None = None
    #: the group id (patient, document, source) of each row, as text, when the user gave groups
    groups: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise InputError(
                f"data: inputs and targets disagree on the number of examples ({len(self.x)} "
                f"inputs, {len(self.y)} targets); pass one target per input"
            )

    def __len__(self) -> int:
        return len(self.y)

    def take(self, rows: torch.Tensor | np.ndarray | list[int] | slice) -> "Examples":
        if not isinstance(rows, slice):
            rows = torch.as_tensor(rows, dtype=torch.long)
        groups = self.groups
        if groups is not None:
            groups = groups[rows] if isinstance(rows, slice) else groups[rows.numpy()]
        return Examples(self.x[rows], self.y[rows], self.index[rows], self.fields, groups=groups)

    def with_targets(self, y: torch.Tensor) -> "Examples":
        return Examples(self.x, y, self.index, self.fields, groups=self.groups)

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x, self.y


def to_examples(data: Any, *, name: str = "data", limit: int = 4096) -> Examples:
    """Materialise at most ``limit`` examples of ``data`` as tensors.

    Accepts ``(X, y)`` tensors, arrays or pandas objects, a map-style ``Dataset`` of ``(x, y)``
    items, a ``DataLoader`` or any iterable of ``(x, y)`` batches.
    """
    if (
        isinstance(data, (tuple, list))
        and len(data) == 2
        and _is_array(data[0])
        and _is_labels(data[1], data[0])
    ):
        x, y = _as_tensor(data[0], name, "X"), _as_tensor(data[1], name, "y")
        if x.ndim == 0 or y.ndim == 0:
            raise InputError(
                f"{name}: X and y need one row per example; got shapes {tuple(x.shape)} and "
                f"{tuple(y.shape)}"
            )
        if len(x) != len(y):
            raise InputError(
                f"{name}: X has {len(x)} rows but y has {len(y)}; each example needs exactly one "
                "target"
            )
        n = min(len(x), limit)
        return Examples(x[:n], y[:n], torch.arange(n))
    if isinstance(data, DataLoader):
        return _from_loader(data, name, limit)
    if isinstance(data, Dataset) and hasattr(data, "__len__") and hasattr(data, "__getitem__"):
        return _from_dataset(data, name, limit)
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise InputError(
            f"{name}: expected (X, y) tensors, a torch Dataset, a DataLoader or an iterable of (x, "
            f"y) batches; got {type(data).__name__}"
        )
    return from_batches(data, name, limit, source=data)


def _is_array(obj: Any) -> bool:
    """A tensor, an array, or a table that converts to one (a pandas DataFrame)."""
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return True
    return callable(getattr(obj, "to_numpy", None)) and getattr(obj, "ndim", None) == 2


def _is_labels(obj: Any, x: Any) -> bool:
    """An array, or a list / pandas Series with one entry per row of ``x``."""
    if _is_array(obj):
        return True
    return (
        (isinstance(obj, list) or hasattr(obj, "__array__")) and len(obj) == len(x) and len(x) != 2
    )


def _as_tensor(obj: Any, name: str, what: str) -> torch.Tensor:
    if isinstance(obj, torch.Tensor):
        if obj.is_meta:
            raise InputError(
                f"{name}: {what} is on the meta device: it has a shape {tuple(obj.shape)} but no "
                "values; pass tensors that hold the data (on the CPU or your accelerator)"
            )
        return obj.detach().cpu()
    if isinstance(obj, (str, bytes)) or _holds_strings(obj):
        raise InputError(_string_labels_message(obj, name, what))
    arr = np.asarray(obj)
    if arr.dtype.kind in "USO" and _holds_strings(arr):
        raise InputError(_string_labels_message(arr, name, what))
    if arr.dtype == object:
        raise InputError(f"{name}: {what} has dtype object; pass a numeric array or tensor")
    if (
        arr.ndim == 0
    ):  # a scalar label (int, np.int64): np.ascontiguousarray would make it shape (1,)
        return torch.from_numpy(arr.reshape(1)).reshape(())
    arr = np.ascontiguousarray(arr)
    if not arr.flags.writeable:  # a read-only view (pandas copy-on-write): torch needs its own
        arr = arr.copy()
    return torch.from_numpy(arr)


def _holds_strings(obj: Any) -> bool:
    """True for text: a string, or an array/list/Series whose first element is one."""
    if isinstance(obj, (str, bytes, np.str_, np.bytes_)):
        return True
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "US":
            return True
        return obj.dtype == object and obj.size > 0 and isinstance(obj.reshape(-1)[0], (str, bytes))
    if isinstance(obj, (list, tuple)) and obj:
        return isinstance(obj[0], (str, bytes))
    values = getattr(obj, "values", None)  # a pandas Series of labels
    return isinstance(values, np.ndarray) and values is not obj and _holds_strings(values)


def _string_labels_message(obj: Any, name: str, what: str) -> str:
    if isinstance(obj, (str, bytes)):
        found = f"the string {obj!r}"
    else:
        values = np.asarray(getattr(obj, "values", obj), dtype=object).reshape(-1)
        distinct = list(dict.fromkeys(values[:1000].tolist()))
        shown = ", ".join(repr(v) for v in distinct[:4]) + (", ..." if len(distinct) > 4 else "")
        found = f"strings ({shown})"
    return (
        f"{name}: {what} holds {found}; the doctor needs numbers: encode class names as integer "
        "labels first, e.g. y = sklearn.preprocessing.LabelEncoder().fit_transform(y) (or {name: "
        "i for i, name in enumerate(sorted(set(y)))})"
    )


def _split_pair(item: Any, name: str, where: str) -> tuple[Any, Any]:
    if isinstance(item, Mapping):
        label = DictInputs.label_key(item, name, where)
        return {k: v for k, v in item.items() if k != label}, item[label]
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
    fields: DictInputs | None = None
    for i in range(n):
        x, y = _split_pair(data[i], name, f"item {i}")
        if isinstance(x, Mapping):
            fields = fields or DictInputs.of(data[i], name, f"item {i}", batched=False)
            x = fields.pack(x, name, f"item {i}", batched=False)
        xs.append(_as_tensor(x, name, f"x of item {i}"))
        ys.append(_as_tensor(y, name, f"y of item {i}"))
    return Examples(_stack(xs, name, "x"), _stack(ys, name, "y"), torch.arange(n), fields)


def _from_loader(loader: DataLoader, name: str, limit: int) -> Examples:
    """A loader's batches, each row indexed by its position in ``loader.dataset``.

    Rows in the order a shuffling loader yields them would point nowhere in the user's data,
    so a map-style loader is read the way it reads itself in one process: the indices its
    batch sampler draws, fetched from its dataset and put together by its collate_fn.
    """
    with kept_generator(loader):
        return _read_loader(loader, name, limit)


class kept_generator:
    """Leaves a DataLoader's own ``generator`` (and its sampler's) where it was: reading the
    loader must not change which batches the user's training then sees."""

    def __init__(self, loader: DataLoader):
        gens = [
            getattr(loader, "generator", None),
            getattr(getattr(loader, "sampler", None), "generator", None),
        ]
        self.generators = [g for g in dict.fromkeys(gens) if isinstance(g, torch.Generator)]

    def __enter__(self) -> "kept_generator":
        self.states = [g.get_state() for g in self.generators]
        return self

    def __exit__(self, *exc: object) -> None:
        for g, state in zip(self.generators, self.states):
            g.set_state(state)


def _read_loader(loader: DataLoader, name: str, limit: int) -> Examples:
    dataset, sampler = loader.dataset, loader.batch_sampler
    if (
        sampler is None
        or not hasattr(dataset, "__getitem__")
        or isinstance(dataset, torch.utils.data.IterableDataset)
    ):
        return from_batches(loader, name, limit, source=loader)
    fetch = getattr(dataset, "__getitems__", None) or (lambda rows: [dataset[i] for i in rows])
    indices: list[int] = []

    def batches() -> Iterable[Any]:
        for rows in sampler:
            rows = list(rows)
            indices.extend(int(i) for i in rows)
            yield loader.collate_fn(fetch(rows))

    examples = from_batches(batches(), name, limit, source=loader)
    index = torch.tensor(indices[: len(examples)], dtype=torch.long)
    return Examples(examples.x, examples.y, index, examples.fields, examples.batch_ends)


def from_batches(batches: Iterable[Any], name: str, limit: int, source: Any = None) -> Examples:
    xs, ys, n = [], [], 0
    fields: DictInputs | None = None
    for b, item in enumerate(batches):
        x, y = _split_pair(item, name, f"batch {b}")
        if isinstance(x, Mapping):
            fields = fields or DictInputs.of(item, name, f"batch {b}", batched=True)
            x = fields.pack(x, name, f"batch {b}", batched=True)
        x, y = _as_tensor(x, name, f"x of batch {b}"), _as_tensor(y, name, f"y of batch {b}")
        if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
            raise InputError(
                f"{name}: batch {b} has x of shape {tuple(x.shape)} and y of shape {tuple(y.shape)}"
                "; batches need a leading batch dimension shared by x and y"
            )
        xs.append(x)
        ys.append(y)
        n += len(y)
        if n >= limit:
            break
    if not xs:
        raise InputError(f"{name}: {why_no_batches(batches if source is None else source)}")
    x, y = _cat(xs, name, "x")[:limit], _cat(ys, name, "y")[:limit]
    ends = tuple(min(int(e), len(y)) for e in np.cumsum([len(t) for t in ys]))
    return Examples(x, y, torch.arange(len(y)), fields, ends)


def why_no_batches(data: Any) -> str:
    """Why ``data`` yielded no batch at all, with the fix: a loader whose one partial batch
    ``drop_last`` drops, an empty dataset or sampler, an iterator already read to its end."""
    if isinstance(data, DataLoader):
        rows = _length(data.dataset)
        size = data.batch_size
        if rows == 0:
            return "the DataLoader's dataset is empty"
        if data.drop_last and size is not None and rows is not None and rows < size:
            return (
                f"the DataLoader yields no batches: its dataset has {rows} rows, fewer than "
                f"batch_size={size}, and drop_last=True drops that partial batch; pass "
                f"drop_last=False or a batch_size of at most {rows}"
            )
        sampled = _length(data.sampler) if data.batch_sampler is not None else None
        if sampled == 0:
            return (
                f"the DataLoader yields no batches: its sampler ({type(data.sampler).__name__}) "
                f"draws no rows from a dataset of {rows if rows is not None else 'unknown'} rows"
            )
        if data.drop_last and size is not None:
            return (
                f"the DataLoader yields no batches (batch_size={size}, drop_last=True drops a "
                "partial batch: does its dataset hold fewer rows than a batch?)"
            )
        return "the DataLoader yields no batches"
    if iter(data) is data:  # an iterator or generator: read once, then empty
        return (
            f"the {type(data).__name__} yielded no batches; an iterator or generator can be read "
            "only once (was it read before?): pass the DataLoader itself or a list of batches"
        )
    return f"the {type(data).__name__} yielded no batches; pass at least one (x, y) batch"


def _length(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:  # an IterableDataset or a sampler without a length
        return None


def _stack(items: list[torch.Tensor], name: str, what: str) -> torch.Tensor:
    shapes = {tuple(t.shape) for t in items}
    if len(shapes) > 1:
        raise InputError(
            f"{name}: {what} differs in shape across items ({sorted(shapes)[:3]}…); pad or resize "
            "to one shape"
        )
    return torch.stack(items)


def _cat(items: list[torch.Tensor], name: str, what: str) -> torch.Tensor:
    shapes = {tuple(t.shape[1:]) for t in items}
    if len(shapes) > 1:
        raise InputError(
            f"{name}: {what} differs in shape across batches ({sorted(shapes)[:3]}…); pad to one "
            "shape"
        )
    return torch.cat(items)


def with_groups(examples: Examples, groups: Any, data: Any, name: str) -> Examples:
    """``examples`` with the group id of each row, read from ``groups`` (one id per row of
    ``data``, the form the user passed) through each row's position in ``data``."""
    from labcoat._groups import group_ids

    if groups is None:
        return examples
    ids = np.asarray(group_ids(groups, name), dtype=object)
    rows = _row_count(data)
    data_name = "val_data" if name == "val_groups" else "data"
    if rows is not None and len(ids) != rows:
        raise InputError(
            f"{name}: has {len(ids)} group ids but {data_name} has {rows} rows; pass one group id "
            f"(patient, document, source) per row of {data_name}"
        )
    last = int(examples.index.max()) if len(examples) else -1
    if last >= len(ids):
        raise InputError(
            f"{name}: has {len(ids)} group ids but {data_name} yielded row {last}; pass one group "
            f"id per row of {data_name}"
        )
    return Examples(
        examples.x,
        examples.y,
        examples.index,
        examples.fields,
        examples.batch_ends,
        groups=ids[examples.index.numpy()],
    )


def _row_count(data: Any) -> int | None:
    """Rows in the data as the user passed it, where that is known without reading it."""
    if isinstance(data, DataLoader):
        data = data.dataset
    if isinstance(data, (tuple, list)) and len(data) == 2 and hasattr(data[0], "__len__"):
        return len(data[0]) if not isinstance(data[0], Mapping) else None
    if isinstance(data, Dataset) and hasattr(data, "__len__"):
        return len(data)
    return None


def split_off(examples: Examples, fraction: float, seed: int) -> tuple[Examples, Examples]:
    """Split a held-out part off ``examples`` at random (stratified by class for integer targets).

    Identical inputs stay on one side: repeated rows (a language model's common sequences, an
    augmented copy) held out beside their twins would make the split leak by construction, so
    rows are drawn in groups of identical inputs. Rows of one user group (``examples.groups``:
    a patient, a document) are drawn together too, as scikit-learn's GroupShuffleSplit does.
    """
    n = len(examples)
    if n < 4:
        raise InputError(f"data: need at least 4 examples to hold some out for validation; got {n}")
    if examples.groups is not None and len(set(examples.groups)) < 2:
        raise InputError(
            "groups: every row is in one group, so no group can be held out; pass val_data (with "
            "val_groups), or groups with at least two ids"
        )
    rng = np.random.default_rng(seed)
    groups = _draw_groups(examples)
    count = int(groups.max()) + 1
    members = [np.flatnonzero(groups == g) for g in range(count)] if count < n else None
    y = examples.y
    if y.ndim == 1 and not torch.is_floating_point(y):
        labels = y.numpy()
        strata = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    else:
        strata = [np.arange(n)]
    mask = np.zeros(n, dtype=bool)
    for rows in strata:
        _hold_out(mask, rng.permutation(rows), round(len(rows) * fraction), groups, members)
    if not mask.any() or mask.all():
        mask[:] = False
        _hold_out(mask, rng.permutation(n), max(1, n // 5), groups, members)
    if mask.all():  # a single group of identical inputs: nothing can be kept apart
        mask[:] = False
        mask[rng.permutation(n)[: max(1, n // 5)]] = True
    val = np.flatnonzero(mask)
    train = np.flatnonzero(~mask)
    return examples.take(rng.permutation(train)), examples.take(val)


def _draw_groups(examples: Examples) -> np.ndarray:
    """A group number per row: rows with identical inputs, or with one user group id, share one
    (connected components when the two overlap)."""
    hash_of: dict[bytes, int] = {}
    by_input = np.array([hash_of.setdefault(h, len(hash_of)) for h in row_hashes(examples.x)])
    if examples.groups is None:
        return by_input
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    _, by_user = np.unique(examples.groups.astype(str), return_inverse=True)
    n, k = len(by_input), len(hash_of)
    # rows -> nodes 0..k-1 (inputs) and k.. (user groups); a row joins its two nodes
    links = coo_matrix((np.ones(n), (by_input, k + by_user)), shape=(k + by_user.max() + 1,) * 2)
    _, component = connected_components(links, directed=False)
    _, numbered = np.unique(component[by_input], return_inverse=True)
    return numbered


def _hold_out(
    mask: np.ndarray, order: np.ndarray, k: int, groups: np.ndarray, members: list | None
) -> None:
    """Mark about ``k`` rows of ``order`` as held out, each with every row identical to it."""
    if members is None:  # all inputs distinct
        mask[order[:k]] = True
        return
    taken = 0
    for row in order:
        if taken >= k:
            break
        if mask[row]:
            continue
        twins = members[groups[row]]
        mask[twins] = True
        taken += len(twins)


#: keys a dict batch's targets go by (Hugging Face uses "labels"), in the order they are tried
LABEL_KEYS = ("labels", "label", "targets", "target", "y")


@dataclass(frozen=True)
class DictInputs:
    """Dict batches (``{"input_ids": ..., "attention_mask": ..., "labels": ...}``, as Hugging Face
    models take them) held as one tensor per batch, so the doctor can index, shuffle and compare
    examples as it does (x, y) pairs; :meth:`adapt` teaches the doctor's model copies to unpack
    it and call the model the way its ``forward`` signature asks.

    One input field is kept as it is; several are flattened per example and laid side by side
    (int64 when all are integer, else float64, both exact for the values they hold).
    """

    label: str
    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]  # per example
    dtypes: tuple[torch.dtype, ...]

    @staticmethod
    def label_key(item: Mapping, name: str, where: str) -> str:
        for key in LABEL_KEYS:
            if key in item:
                return key
        raise InputError(
            f"{name}: {where} is a dict with keys {sorted(map(str, item))} but none holds the "
            f"targets; name them one of {list(LABEL_KEYS)} (as Hugging Face's 'labels'), or pass "
            "(x, y) pairs"
        )

    @classmethod
    def of(cls, item: Mapping, name: str, where: str, *, batched: bool) -> "DictInputs":
        label = cls.label_key(item, name, where)
        names, shapes, dtypes = [], [], []
        for key, value in item.items():
            if key == label:
                continue
            t = _as_tensor(value, name, f"{key!r} of {where}")
            names.append(str(key))
            shapes.append(tuple(t.shape[1:] if batched else t.shape))
            dtypes.append(t.dtype)
        if not names:
            raise InputError(
                f"{name}: {where} holds only the targets ({label!r}); add the model's inputs to it"
            )
        return cls(label, tuple(names), tuple(shapes), tuple(dtypes))

    @property
    def packed_dtype(self) -> torch.dtype:
        if len(self.names) == 1:
            return self.dtypes[0]
        return torch.float64 if any(d.is_floating_point for d in self.dtypes) else torch.int64

    @property
    def widths(self) -> list[int]:
        return [int(np.prod(s)) if s else 1 for s in self.shapes]

    def pack(self, fields: Mapping, name: str, where: str, *, batched: bool) -> torch.Tensor:
        if set(map(str, fields)) != set(self.names):
            raise InputError(
                f"{name}: {where} has input keys {sorted(map(str, fields))}; the first had "
                f"{list(self.names)}"
            )
        tensors = [_as_tensor(fields[k], name, f"{k!r} of {where}") for k in self.names]
        if not batched:
            tensors = [t.unsqueeze(0) for t in tensors]
        if len(tensors) == 1:
            return tensors[0] if batched else tensors[0][0]
        rows = len(tensors[0])
        packed = torch.cat([t.reshape(rows, -1).to(self.packed_dtype) for t in tensors], dim=1)
        return packed if batched else packed[0]

    def unpack(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if len(self.names) == 1:
            return {self.names[0]: x}
        parts = x.split(self.widths, dim=1)
        return {
            n: p.reshape((len(x),) + s).to(d)
            for n, p, s, d in zip(self.names, parts, self.shapes, self.dtypes)
        }

    def is_packed(self, x: Any) -> bool:
        """True for a tensor laid out as :meth:`pack` lays out a batch."""
        if not isinstance(x, torch.Tensor) or x.dtype != self.packed_dtype or x.ndim < 1:
            return False
        if len(self.names) == 1:
            return tuple(x.shape[1:]) == self.shapes[0]
        return x.ndim == 2 and x.shape[1] == sum(self.widths)

    def as_batch(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The batch as the user's loader gives it, for the user's own train step."""
        return {**self.unpack(x), self.label: y}

    def call_style(self, model: Any) -> str:
        """ "kwargs" to call ``model(**inputs)``, "dict" to call ``model(inputs)``, as the model's
        forward signature says; an InputError with the fix when it takes neither."""
        params = list(inspect.signature(type(model).forward).parameters.values())[1:]
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if any(p.kind == p.VAR_KEYWORD for p in params) or set(self.names) <= named:
            return "kwargs"
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = [p for p in positional if p.default is p.empty]
        if (
            len(required) <= 1
            and positional
            and (len(self.names) > 1 or _takes_a_mapping(positional[0]))
        ):
            return "dict"
        shown = ", ".join(p.name for p in params) or "no arguments"
        fix = (
            "rename the batch's keys to the forward's arguments, or wrap the model in a module "
            f"whose forward(batch) calls it as model(batch[{self.names[0]!r}], ...)"
        )
        raise InputError(
            f"data: batches are dicts with inputs {list(self.names)} and targets {self.label!r}, "
            f"but {type(model).__name__}.forward({shown}) takes neither those keys as arguments "
            f"(model(**batch)) nor one dict (model(batch)); {fix}"
        )

    def adapt(self, model: Any) -> None:
        """Make ``model`` (one of the doctor's own copies, never the user's object) accept the
        packed tensor: a subclass whose forward unpacks it and calls the original as the
        signature says. Calls with anything else (the user's own step passing the dict) go to
        the original forward unchanged."""
        style = self.call_style(model)
        cls = type(model)
        original = cls.forward
        layout = self

        def forward(module, *args, **kwargs):
            if len(args) == 1 and not kwargs and layout.is_packed(args[0]):
                inputs = layout.unpack(args[0])
                return original(module, **inputs) if style == "kwargs" else original(module, inputs)
            return original(module, *args, **kwargs)

        model.__class__ = type(
            cls.__name__,
            (cls,),
            {"forward": forward, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )


def _takes_a_mapping(param: inspect.Parameter) -> bool:
    """A forward argument that reads as a whole batch: annotated as a dict/Mapping, or named so."""
    hint = str(param.annotation).lower()
    return (
        "dict" in hint
        or "mapping" in hint
        or param.name in ("batch", "inputs", "features", "sample", "data")
    )


def row_hashes(x: torch.Tensor) -> list[bytes]:
    """A digest per example, for exact-duplicate detection without pairwise comparison."""
    arr = np.ascontiguousarray(x.reshape(len(x), -1).cpu().numpy())
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in arr]
