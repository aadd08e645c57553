"""A design's factors and options from a TOML file, for ``labcoat design FACTORS.toml``::

[factors]
lr = [1e-3, 3e-3]
warmup = [0, 500]
dropout = [0.0, 0.1]

[design]              # optional: any keyword of labcoat.design()
seeds = 2
effects = ["lr", "warmup", "lr:warmup"]
noise = 0.004         # the metric's seed standard deviation (or pilot = [...])
effect_size = 0.01    # the smallest high - low difference worth detecting
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from labcoat.errors import InputError

#: the keywords the [design] table may set (labcoat.design's, but the factors)
OPTIONS = (
    "runs", "seeds", "resolution", "budget", "effects", "needed", "noise", "pilot",
    "effect_size", "power", "alpha", "blocks", "orders", "kind", "seed",
)  # fmt: skip


def read_factors(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"factors": {...}, **options}`` from the TOML file at ``path``."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        from labcoat.extras import import_module

        tomllib = import_module("tomli", "design", "reading a TOML design")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file (a TOML file with a [factors] table)")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    factors = data.get("factors")
    if not isinstance(factors, dict) or not factors:
        raise InputError(f"{path}: expected a [factors] table, name = [low, high] per factor")
    options = data.get("design", {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InputError(
            f"{path}: [design] has unknown key {unknown[0]!r}; known: {', '.join(OPTIONS)}"
        )
    extra = sorted(set(data) - {"factors", "design"})
    if extra:
        raise InputError(f"{path}: unknown table {extra[0]!r}; expected [factors] and [design]")
    return {"factors": factors, **options}


__all__ = ["OPTIONS", "read_factors"]
