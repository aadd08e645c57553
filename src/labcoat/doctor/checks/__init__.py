"""Doctor checks, one module per layer; importing this package registers them all."""

from labcoat.doctor.checks import data, loader, model, overfit, shuffle, update  # noqa: F401
