"""The shipped prior for calibrating extrapolation when the runs are too few: written by
``bench/scale_prior.py`` from public scaling data; do not edit by hand."""

PRIOR = {
    "forms": {
        "broken": {
            "coverage": None,
            "frontier": 0.14476056173658353,
            "lower": 0.1619494597631656,
            "max_distance": 1.9821131977192739,
            "pairs": 5170,
            "upper": 0.1619494597631656,
        },
        "chinchilla": {
            "coverage": None,
            "frontier": 0.03913269717191253,
            "lower": 0.02254220697979443,
            "max_distance": 7.552468739100412,
            "pairs": 1888,
            "upper": 0.02254220697979443,
        },
        "curve": {
            "coverage": None,
            "frontier": 0.08521270250969931,
            "lower": 0.04261511666068122,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.04261511666068122,
        },
        "default": {
            "coverage": None,
            "frontier": 0.08637391764396124,
            "lower": 0.05459806624747883,
            "max_distance": 1.9821131977192739,
            "pairs": 31509,
            "upper": 0.05459806624747883,
        },
        "m1": {
            "coverage": None,
            "frontier": 0.08969530520097595,
            "lower": 0.053072203532807775,
            "max_distance": 1.9821131977192739,
            "pairs": 5298,
            "upper": 0.053072203532807775,
        },
        "m2": {
            "coverage": None,
            "frontier": 0.08114011942154191,
            "lower": 0.04724712261564896,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.04724712261564896,
        },
        "m3": {
            "coverage": None,
            "frontier": 0.057242213110050316,
            "lower": 0.037721487918864566,
            "max_distance": 1.9821131977192739,
            "pairs": 5284,
            "upper": 0.037721487918864566,
        },
        "m4": {
            "coverage": None,
            "frontier": 0.09615213273242583,
            "lower": 0.06404194923661229,
            "max_distance": 1.9821131977192739,
            "pairs": 5189,
            "upper": 0.06404194923661229,
        },
    },
    "frontier": {
        "factors": [1.7216339126988236, 2.1371540981392925, 2.758449185432518, 5.768757469074686],
        "levels": [0.8, 0.9, 0.95, 0.99],
        "points": 896,
        "splits": 78,
    },
    "level": 0.95,
    "source": "bench/scale_prior.py: ColPret curves (GPT-3, RedPajama, DataBlations, Pile-T5, "
    "OPT; OLMo losses and downstream errors; for the two-variable form, the "
    "over-training grid's loss curves)",
}
