import json
import math

import numpy as np
import pytest

from labcoat.findings import CheckRegistry, Finding, failed, passed, skipped, worst


def test_registry_builds_findings_with_declaration():
    reg = CheckRegistry(["data"])

    @reg.check("labels.range", layer="data", falsifies="labels fit the output", predicts="0 <= y < C")
    def _labels(ctx):
        return failed("label 12 >= 10 outputs", max_label=np.int64(12), bad_rows=np.array([3, 7]))

    (check,) = list(reg)
    f = check.finding(check.run(None))
    assert (f.check, f.layer, f.status) == ("labels.range", "data", "fail")
    assert f.falsifies == "labels fit the output" and f.predicts == "0 <= y < C"
    d = f.to_dict()
    json.dumps(d, allow_nan=False)  # strict JSON
    assert d["evidence"] == {"max_label": 12, "bad_rows": [3, 7]}
    assert Finding.from_dict(d) == Finding.from_dict(json.loads(json.dumps(d)))


def test_registry_refuses_duplicates_and_unknown_layers():
    reg = CheckRegistry(["data"])
    reg.check("a", layer="data", falsifies="", predicts="")(lambda c: passed(""))
    with pytest.raises(ValueError, match="already registered"):
        reg.check("a", layer="data", falsifies="", predicts="")(lambda c: passed(""))
    with pytest.raises(ValueError, match="unknown layer"):
        reg.check("b", layer="nope", falsifies="", predicts="")


def test_nonfinite_evidence_is_strict_json():
    f = Finding("x", "data", "fail", "m", evidence={"loss": math.nan, "g": [math.inf, 1.0]})
    assert f.to_dict()["evidence"] == {"loss": "nan", "g": ["inf", 1.0]}


def test_worst_orders_statuses():
    mk = lambda s: Finding("c", "l", s, "")
    assert worst([mk("pass"), mk("skip")]) == "pass"
    assert worst([mk("pass"), mk("fail"), mk("warn")]) == "fail"
    assert worst([]) is None
    assert skipped("n/a").status == "skip"
