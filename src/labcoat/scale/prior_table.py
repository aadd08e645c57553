"""The shipped prior for calibrating extrapolation when the runs are too few: written by
``bench/scale_prior.py`` from public scaling data; do not edit by hand."""

PRIOR = {
    "level": 0.95,
    "source": "placeholder",
    "forms": {"default": {"upper": 0.05, "lower": 0.05, "max_distance": 2.0, "coverage": None}},
}
