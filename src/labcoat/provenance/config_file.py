"""The config a run records, as the user names it: inline JSON, or a JSON or TOML file (any other
file is kept as its text), read by its format so ``labcoat run --config`` and a script agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from labcoat.errors import InputError


def read_config(value: str | None) -> Any:
    """``value`` as a config: ``None``, inline JSON (``'{"lr": 0.1}'``), or the contents of a
    ``.json``/``.toml`` file; another file is ``{"file": path, "text": its text}``."""
    if value is None:
        return None
    if value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"--config: inline JSON does not parse ({exc.msg} at column {exc.colno})"
            ) from None
    path = Path(value)
    if not path.is_file():
        raise InputError(
            f"--config: {value!r} is not a file or inline JSON; give config.json, config.toml or "
            f"'{{\"lr\": 0.1}}'"
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"--config: cannot read {value} ({exc.strerror or exc})") from None
    loaders: dict[str, Callable[[str], Any]] = {".json": json.loads}
    try:
        import tomllib

        loaders[".toml"] = tomllib.loads
    except ImportError:  # Python 3.10
        pass
    loader = loaders.get(path.suffix.lower())
    if loader is None:
        return {"file": str(path), "text": text}
    try:
        return loader(text)
    except ValueError as exc:
        raise InputError(f"--config: {value} does not parse as {path.suffix[1:]} ({exc})") from None


__all__ = ["read_config"]
