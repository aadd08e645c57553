"""The shipped prior for calibrating extrapolation when the runs are too few: written by
``bench/scale_prior.py`` from public scaling data; do not edit by hand."""

PRIOR = {
    "forms": {
        "broken": {
            "coverage": None,
            "lower": 0.14703772985861494,
            "max_distance": 1.9821131977192739,
            "pairs": 5170,
            "upper": 0.14703772985861494,
        },
        "chinchilla": {
            "coverage": None,
            "lower": 0.009659989606791645,
            "max_distance": 4.626751809748789,
            "pairs": 672,
            "upper": 0.009659989606791645,
        },
        "curve": {
            "coverage": None,
            "lower": 0.04265611445298707,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.04265611445298707,
        },
        "default": {
            "coverage": None,
            "lower": 0.05525575141592535,
            "max_distance": 1.9821131977192739,
            "pairs": 31509,
            "upper": 0.05525575141592535,
        },
        "m1": {
            "coverage": None,
            "lower": 0.05207985692784681,
            "max_distance": 1.9821131977192739,
            "pairs": 5298,
            "upper": 0.05207985692784681,
        },
        "m2": {
            "coverage": None,
            "lower": 0.04792912874491709,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.04792912874491709,
        },
        "m3": {
            "coverage": None,
            "lower": 0.03792461549237799,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.03792461549237799,
        },
        "m4": {
            "coverage": None,
            "lower": 0.0686176594959095,
            "max_distance": 1.9821131977192739,
            "pairs": 5189,
            "upper": 0.0686176594959095,
        },
    },
    "frontier": {
        "factors": [1.7734082128640984, 2.015087685246809, 2.615055970438672, 5.768758343713468],
        "levels": [0.8, 0.9, 0.95, 0.99],
        "points": 888,
        "splits": 78,
    },
    "level": 0.95,
    "source": "bench/scale_prior.py: ColPret curves (GPT-3, RedPajama, DataBlations, Pile-T5, "
    "OPT; OLMo losses and downstream errors) and the Chinchilla points",
}
