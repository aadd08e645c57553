"""Doctor checks, one module per layer; importing this package registers them all."""

from labcoat.doctor.checks import (  # noqa: F401
    data,
    dataloader,
    gradients,
    model,
    overfit,
    resume,
    rows,
    sequences,
    shuffle,
    update,
)
from labcoat.doctor.registry import REGISTRY  # noqa: E402  (every check above is declared)

__all__ = ["REGISTRY"]
