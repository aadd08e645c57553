"""The software environment of a run, comparable run to run.

A silent dependency upgrade can change training dynamics, so every installed distribution is
recorded with its version (from ``importlib.metadata``, which reads metadata and imports
nothing). torch, CUDA and the GPUs are described only when torch is already imported: a ledger
must not pay for, or change, a torch import the program did not ask for. Environment variables
that change numerics or placement are kept; anything that looks like a secret is not.
"""

from __future__ import annotations

import getpass
import importlib.metadata
import os
import platform
import socket
import sys
from typing import Any

#: variables that change what a run computes or where; matched by exact name or prefix
VARIABLE_NAMES = (
    "PYTHONHASHSEED",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_PORT",
)
VARIABLE_PREFIXES = (
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "NCCL_",
    "TORCH_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "XLA_",
    "TF_",
)
SECRET_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH")


def installed_packages() -> dict[str, str]:
    """Distribution name (normalised, as pip shows it) -> version, sorted by name."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name, version = _from_folder_name(dist) or (
            dist.metadata["Name"] if dist.metadata else None,
            dist.version,
        )
        if not name:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        found.setdefault(key, version)  # first on sys.path wins, as for imports
    return dict(sorted(found.items()))


def _from_folder_name(dist: importlib.metadata.Distribution) -> tuple[str, str] | None:
    """(name, version) from a ``name-version.dist-info`` folder: what pip writes, read without
    parsing each METADATA file (that takes about half a second for a few hundred packages)."""
    folder = getattr(dist, "_path", None)
    if folder is None or folder.suffix != ".dist-info":
        return None
    name, _, version = folder.stem.partition("-")
    return (name, version) if name and version[:1].isdigit() else None


def relevant_variables(environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    kept = {}
    for name, value in environ.items():
        if any(marker in name.upper() for marker in SECRET_MARKERS):
            continue
        if name in VARIABLE_NAMES or name.startswith(VARIABLE_PREFIXES):
            kept[name] = value
    return dict(sorted(kept.items()))


def torch_details() -> dict[str, Any] | None:
    """torch, CUDA, cuDNN and GPU names, or None when torch has not been imported."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "cuda"):
        return None
    details: dict[str, Any] = {
        "version": str(torch.__version__),
        "cuda": getattr(torch.version, "cuda", None),
        "debug": bool(getattr(torch.version, "debug", False)),
        "cuda_available": bool(torch.cuda.is_available()),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "num_threads": int(torch.get_num_threads()),
    }
    cudnn = getattr(torch.backends, "cudnn", None)
    if cudnn is not None and cudnn.is_available():
        details["cudnn"] = cudnn.version()
        details["cudnn_benchmark"] = bool(cudnn.benchmark)
    if details["cuda_available"]:
        details["gpus"] = [
            {
                "name": torch.cuda.get_device_name(i),
                "capability": list(torch.cuda.get_device_capability(i)),
                "memory_bytes": int(torch.cuda.get_device_properties(i).total_memory),
            }
            for i in range(torch.cuda.device_count())
        ]
        details["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    return details


def capture_environment() -> dict[str, Any]:
    """Python, platform, packages, torch/GPU (if imported) and the relevant variables."""
    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": "-".join(platform.libc_ver()).strip("-") or None,
        },
        "packages": installed_packages(),
        "torch": torch_details(),
        "variables": relevant_variables(),
    }


def host_details() -> dict[str, Any]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry inside some containers
        user = None
    return {"host": socket.gethostname(), "user": user, "pid": os.getpid()}


def automatic_seeds() -> dict[str, Any]:
    """Seeds visible without changing anything: PYTHONHASHSEED, and torch's if torch is imported."""
    seeds: dict[str, Any] = {}
    if "PYTHONHASHSEED" in os.environ:
        seeds["PYTHONHASHSEED"] = os.environ["PYTHONHASHSEED"]
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "initial_seed"):
        seeds["torch.initial_seed"] = int(torch.initial_seed())
    return seeds
