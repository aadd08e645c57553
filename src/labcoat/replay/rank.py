"""This rank's place in a recorded distributed run (see :mod:`labcoat.replay.distributed`):
under ``torch.distributed``, rank 0 draws the run id and hands it to the other ranks through
the process group's store (a key, not a collective), each rank records into
``<runs>/<run id>/rank<k>/``, and an automatically chosen ``every`` is agreed once."""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder

GROUP_FILE = "group.json"
_joined = 0  # recordings that joined a group in this process (each its own store key)
_warned_unjoined = False


@dataclass
class Group:
    """This rank's place in a recorded distributed run."""

    id: str
    rank: int
    world_size: int
    local_rank: int | None
    replicated: dict[str, list[str]]
    store: Any = field(default=None, repr=False)
    key: str = ""
    every: int | None = None

    def agree_every(self, required: float) -> int:
        """The checkpoint interval every rank uses: the largest any rank needs (agreed once,
        through the store, at the same step on every rank; fixed from then on)."""
        from labcoat.replay.checkpoint import nice_every

        if self.every is None:
            self.store.set(f"{self.key}/every/{self.rank}", repr(float(required)))
            needed = [
                float(self.store.get(f"{self.key}/every/{r}").decode())
                for r in range(self.world_size)
            ]
            self.every = nice_every(max(needed))
        return self.every

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rank": self.rank,
            "world_size": self.world_size,
            "local_rank": self.local_rank,
            "replicated": self.replicated,
            "every_agreed": self.every,
        }


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


def join_group(rec: "Recorder") -> Group | None:
    """The group this recording belongs to (and its folders made), or None outside
    ``torch.distributed``; sets ``rec.dir`` and ``rec.run_id`` to this rank's."""
    global _joined, _warned_unjoined
    import torch

    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        world = os.environ.get("WORLD_SIZE", "").strip()
        if world.isdigit() and int(world) > 1 and not _warned_unjoined:
            _warned_unjoined = True
            warnings.warn(
                f"labcoat.replayable: WORLD_SIZE={world} but torch.distributed is not initialized "
                f"yet, so rank {os.environ.get('RANK', '?')} records a run of its own that "
                "`labcoat replay` cannot relaunch with its peers; call "
                "torch.distributed.init_process_group before labcoat.replayable to record one run "
                "with every rank",
                RuntimeWarning,
                stacklevel=4,
            )
        return None
    world = dist.get_world_size()
    if world <= 1:
        return None
    rank = dist.get_rank()
    store = _default_store()
    _joined += 1
    key = f"labcoat.replayable/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{_joined}"
    if rank == 0:
        gid = rec.run_id
        store.set(f"{key}/id", gid)
    else:
        gid = store.get(f"{key}/id").decode()
    local = os.environ.get("LOCAL_RANK", "").strip()
    group = Group(
        id=gid,
        rank=rank,
        world_size=world,
        local_rank=int(local) if local.isdigit() else None,
        replicated=_replicated(rec),
        store=store,
        key=key,
    )
    top = rec.dir.parent / gid
    top.mkdir(parents=True, exist_ok=True)
    rec.dir = top / f"rank{rank}"
    rec.run_id = f"{gid}/rank{rank}"
    if rank == 0:
        from labcoat.replay.checkpoint import write_atomic

        manifest = {
            "version": 1,
            "run_id": gid,
            "world_size": world,
            "ranks": [f"rank{r}" for r in range(world)],
            "backend": str(dist.get_backend()),
            "created": time.time(),
        }
        write_atomic(top / GROUP_FILE, json.dumps(manifest, indent=1).encode())
    return group


def _replicated(rec: "Recorder") -> dict[str, list[str]]:
    from labcoat.watch._resolve import select_replicated

    return {
        key: list(select_replicated(model, None))
        for key, model in rec.models.items()
        if hasattr(model, "named_parameters")
    }
