"""Eight small CPU training scripts, each run bare and under ``labcoat.replayable``: a recorder
is an observer, so both must log the same values bit for bit, and a replay from a mid-run checkpoint
must reproduce the recording.

``python -m tests.replay.eight NAME OUT [--record]`` runs script NAME and writes what it logged
to OUT (JSON); :func:`train` runs it in this process (the fast tests). Each script's features:

- ``shuffle``: a shuffled DataLoader, no workers;
- ``dropout``: dropout and Adam;
- ``augment0``: torch / NumPy / ``random`` augmentation in ``__getitem__``, no workers;
- ``augment2``: the same augmentation in two workers;
- ``bf16``: bf16 autocast with dropout;
- ``steplr``: SGD with momentum and StepLR over three epochs;
- ``accumulate``: gradient accumulation over three batches, across epoch boundaries;
- ``epochs``: two workers, dropout and augmentation across an epoch boundary, a checkpoint
  inside the second epoch.

Outside the eight: ``unseeded`` (``random`` never seeded: not reproducible bare),
``persistent`` (two persistent workers over three epochs) and ``iterable0`` (an
IterableDataset drawing from the global RNGs in the main process: said at record time).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

SCRIPTS: dict[str, dict[str, Any]] = {
    "shuffle": {},
    "dropout": {"dropout": 0.3, "adam": True},
    "augment0": {"augment": True},
    "augment2": {"augment": True, "workers": 2},
    "bf16": {"bf16": True, "dropout": 0.2},
    "steplr": {"steplr": True, "epochs": 3},
    "accumulate": {"accumulate": 3, "epochs": 2, "n": 40},
    "epochs": {"workers": 2, "augment": True, "dropout": 0.2, "epochs": 2},
    "unseeded": {"dropout": 0.2, "seeded": False},
    "persistent": {"workers": 2, "augment": True, "dropout": 0.2, "epochs": 3, "persistent": True},
    "iterable0": {"iterable": True, "augment": True},
}
EIGHT = list(SCRIPTS)[:8]
#: the checkpoint interval of every recording, and a mid-run step to replay from
EVERY = 4


class Bare:
    """What a script does without ``labcoat.replayable``: plain loops, counting steps as the
    recorder does (an iteration of an innermost loop)."""

    step = 0

    def __enter__(self) -> "Bare":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def loop(self, name: str, iterable: Any):
        for item in iterable:
            yield item
            if name == "step":
                self.step += 1

    def log(self, **values: Any) -> None:
        pass


def train(name: str, recorder: Any = None) -> list[list[Any]]:
    """Run script ``name`` (under ``recorder``, a ``labcoat.replayable(...)`` not yet entered, or
    bare); returns what it logged: [step, name, value] rows."""
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset, IterableDataset

    cfg = SCRIPTS[name]
    torch.set_num_threads(1)
    if cfg.get("seeded", True):
        random.seed(0)
        np.random.seed(0)
        torch.manual_seed(0)
    n, batch = int(cfg.get("n", 32)), 4
    gen = torch.Generator().manual_seed(1)
    xs = torch.randn(n, 6, generator=gen)
    ys = (xs[:, 0] - xs[:, 1] > 0).long()
    augment = bool(cfg.get("augment"))

    def item(i: int) -> Any:
        x = xs[i]
        if augment:
            x = x + 0.1 * torch.randn(6) + 0.1 * float(np.random.randn()) + 0.1 * random.random()
        return x, ys[i]

    class Data(Dataset):
        def __len__(self) -> int:
            return n

        def __getitem__(self, i: int) -> Any:
            return item(i)

    class Stream(IterableDataset):
        def __iter__(self):
            for i in range(n):
                yield item(i)

    if cfg.get("iterable"):
        loader = DataLoader(Stream(), batch_size=batch)
    else:
        loader = DataLoader(
            Data(),
            batch_size=batch,
            shuffle=True,
            num_workers=int(cfg.get("workers", 0)),
            persistent_workers=bool(cfg.get("persistent")),
        )
    layers: list[nn.Module] = [nn.Linear(6, 16), nn.ReLU()]
    if cfg.get("dropout"):
        layers.append(nn.Dropout(cfg["dropout"]))
    model = nn.Sequential(*layers, nn.Linear(16, 2))
    if cfg.get("adam"):
        opt: Any = torch.optim.Adam(model.parameters(), lr=1e-2)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = None
    if cfg.get("steplr"):
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    accumulate = int(cfg.get("accumulate", 1))
    if recorder is None:
        rec: Any = Bare()
    else:
        rec = recorder(model=model, optimizer=opt, scheduler=sched)
    out: list[list[Any]] = []
    with rec:
        for _ in rec.loop("epoch", range(int(cfg.get("epochs", 2)))):
            for x, y in rec.loop("step", loader):
                step = rec.step
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(cfg.get("bf16"))):
                    logits = model(x)
                loss = nn.functional.cross_entropy(logits.float(), y) / accumulate
                if not cfg.get("seeded", True):
                    loss = loss + 1e-3 * random.random()
                loss.backward()
                if (step + 1) % accumulate == 0:
                    opt.step()
                    opt.zero_grad()
                value = loss.item()
                rec.log(loss=value)
                out.append([step, "loss", value])
            if sched is not None:
                sched.step()
                lr = sched.get_last_lr()[0]
                rec.log(lr=lr)
                out.append([rec.step, "lr", lr])
    return out


def main(argv: list[str]) -> None:
    name, path = argv[0], argv[1]
    recorder = None
    if "--record" in argv:
        import labcoat

        def recorder(**objs: Any) -> Any:
            return labcoat.replayable(**objs, every=EVERY, ledger=False)

    logged = train(name, recorder)
    with open(path, "w") as fh:
        json.dump(logged, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
