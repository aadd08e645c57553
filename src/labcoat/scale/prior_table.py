"""The shipped prior for calibrating extrapolation when the runs are too few: written by
``bench/scale_prior.py`` from public scaling data; do not edit by hand."""

PRIOR = {
    "forms": {
        "broken": {
            "coverage": None,
            "lower": 0.044090623027457795,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.044090623027457795,
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
            "lower": 0.04017600517012871,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.04017600517012871,
        },
        "default": {
            "coverage": None,
            "lower": 0.03920767213640143,
            "max_distance": 1.978971011316201,
            "pairs": 18372,
            "upper": 0.03920767213640143,
        },
        "m1": {
            "coverage": None,
            "lower": 0.03429305252493778,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.03429305252493778,
        },
        "m2": {
            "coverage": None,
            "lower": 0.037941312479885074,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.037941312479885074,
        },
        "m3": {
            "coverage": None,
            "lower": 0.03272287912941315,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.03272287912941315,
        },
        "m4": {
            "coverage": None,
            "lower": 0.055970378026736455,
            "max_distance": 1.978971011316201,
            "pairs": 3062,
            "upper": 0.055970378026736455,
        },
    },
    "level": 0.95,
    "source": "bench/scale_prior.py: ColPret curves (GPT-3, RedPajama, DataBlations, Pile-T5, "
    "OLMo) and the Chinchilla points",
}
