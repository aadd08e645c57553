"""Doctor checks, one module per layer; importing this package registers them all."""

from labcoat.doctor.checks import data, dataloader, model, overfit, shuffle, update  # noqa: F401
from labcoat.doctor.registry import REGISTRY  # noqa: E402  (every check above is declared)

__all__ = ["REGISTRY"]
