"""Everything needed to say what a run was: command, code, config, data, environment, seeds, host.

:func:`capture_provenance` gathers it in one call, when a run starts. Each part that is compared
between runs carries a content hash (config, data, environment), and the uncommitted diff is
kept as bytes that the ledger stores once, by hash, however many runs share it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from labcoat._jsonable import dumps, jsonable
from labcoat._validation import article
from labcoat.errors import InputError
from labcoat.provenance.environment import automatic_seeds, capture_environment, host_details
from labcoat.provenance.fingerprint import Fingerprint, fingerprint_all
from labcoat.provenance.git import GitState, git_state


def content_digest(obj: Any) -> str:
    """sha256 of a JSON value in canonical form: the hash of a config or an environment."""
    return hashlib.sha256(dumps(obj).encode()).hexdigest()


@dataclass
class Provenance:
    """What a run was: command, host, code, config, data, environment and seeds."""

    command: list[str]
    cwd: str
    host: str
    user: str | None
    pid: int
    git: GitState | None
    config: Any
    config_hash: str | None
    data: list[Fingerprint]
    data_hash: str | None
    env: dict[str, Any]
    env_hash: str
    seeds: dict[str, Any] = field(default_factory=dict)


def normalise_config(config: Any) -> Any:
    """A config as a JSON value: mappings, dataclasses, ``argparse.Namespace`` and objects with
    ``to_dict()``/``model_dump()`` are accepted; anything else is refused with the fix."""
    if config is None:
        return None
    if isinstance(config, argparse.Namespace):
        config = vars(config)
    elif dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    elif not isinstance(config, Mapping):
        for method in ("to_dict", "model_dump", "to_container"):
            if callable(getattr(config, method, None)):
                config = getattr(config, method)()
                break
    if not isinstance(config, Mapping):
        raise InputError(
            f"config: expected a mapping, a dataclass or an argparse.Namespace; got a "
            f"{type(config).__name__}; pass dict(config) or the parsed options"
        )
    return jsonable(dict(config))


def normalise_seeds(seeds: Any) -> dict[str, Any]:
    if seeds is None:
        return {}
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        return {"seed": seeds}
    if isinstance(seeds, Mapping):
        return {str(k): jsonable(v) for k, v in seeds.items()}
    raise InputError(
        f"seeds: expected an int or a mapping of name -> seed; got "
        f"{article(type(seeds).__name__)}, "
        "e.g. pass seeds={'torch': 0, 'numpy': 0}"
    )


def capture_provenance(
    *,
    config: Any = None,
    data: Any = None,
    seeds: Any = None,
    command: Sequence[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    full_hash: bool = False,
    git: bool = True,
    exclude: Sequence[str | os.PathLike[str]] = (),
) -> Provenance:
    """Capture a run's provenance now. ``command`` defaults to this process's argv; files in
    ``exclude`` are left out of the git state's untracked files."""
    cwd = os.fspath(cwd or os.getcwd())
    config_value = normalise_config(config)
    fingerprints = fingerprint_all(data, full=full_hash)
    env = capture_environment()
    host = host_details()
    return Provenance(
        command=[str(c) for c in (command if command is not None else [sys.executable, *sys.argv])],
        cwd=cwd,
        host=host["host"],
        user=host["user"],
        pid=host["pid"],
        git=git_state(cwd, exclude=exclude) if git else None,
        config=config_value,
        config_hash=None if config_value is None else content_digest(config_value),
        data=fingerprints,
        data_hash=content_digest([f.to_dict() for f in fingerprints]) if fingerprints else None,
        env=env,
        env_hash=content_digest(env),
        seeds={**automatic_seeds(), **normalise_seeds(seeds)},
    )
