import json
import math

import numpy as np
import pytest

from labcoat.findings import CheckRegistry, Finding, failed, passed, skipped, worst


def test_registry_builds_findings_with_declaration():
    reg = CheckRegistry("doctor", ["data"])

    @reg.check(
        "labels.range", layer="data", falsifies="labels fit the output", predicts="0 <= y < C"
    )
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
    reg = CheckRegistry("doctor", ["data"])
    reg.check("a", layer="data", falsifies="f", predicts="p")(lambda c: passed(""))
    with pytest.raises(ValueError, match="already registered in the doctor registry"):
        reg.check("a", layer="data", falsifies="f", predicts="p")(lambda c: passed(""))
    with pytest.raises(ValueError, match="unknown layer"):
        reg.check("b", layer="nope", falsifies="f", predicts="p")
    with pytest.raises(ValueError, match="non-empty 'predicts'"):
        reg.check("c", layer="data", falsifies="f", predicts="")(lambda c: passed(""))


def test_evaluate_skips_a_check_that_does_not_apply_and_runs_one_that_does():
    reg = CheckRegistry("scale", ["scale"])
    reg.check(
        "s",
        falsifies="f",
        predicts="p",
        severity="warn",
        applies=lambda x: None if x else "needs a truthy target",
    )(lambda x: passed("ok"))
    (check,) = reg
    assert check.layer == "scale" and check.severity == "warn"
    assert check.evaluate(0).status == "skip" and check.evaluate(0).message.startswith("needs")
    assert check.evaluate(1, step=3).status == "pass" and check.evaluate(1, step=3).step == 3


def test_every_engine_declares_its_checks_in_the_one_registry_type():
    from labcoat.engines import names, registries
    from labcoat.findings import Check

    found = {r.engine: r for r in registries()}
    assert sorted(found) == sorted(names())
    for registry in found.values():
        assert isinstance(registry, CheckRegistry) and len(registry) > 0
        for check in registry:
            assert isinstance(check, Check) and check.falsifies and check.predicts
            assert check.layer in registry.layers
    assert "nonfinite" in found["watch"] and "audit.labels" in found["audit"]
    assert [r.engine for r in registries("scale")] == ["scale"]


def test_the_old_names_of_the_engine_list_warn_and_answer_from_labcoat_engines():
    import labcoat.findings as findings
    from labcoat import engines

    with pytest.warns(DeprecationWarning, match="moved to labcoat.engines.names"):
        assert tuple(findings.ENGINES) == engines.names()
    with pytest.warns(DeprecationWarning, match="moved to labcoat.engines.registries"):
        assert findings.registries is engines.registries


def test_nonfinite_evidence_is_strict_json():
    f = Finding("x", "data", "fail", "m", evidence={"loss": math.nan, "g": [math.inf, 1.0]})
    assert f.to_dict()["evidence"] == {"loss": "nan", "g": ["inf", 1.0]}


def test_worst_orders_statuses():
    mk = lambda s: Finding("c", "l", s, "")
    assert worst([mk("pass"), mk("skip")]) == "pass"
    assert worst([mk("pass"), mk("fail"), mk("warn")]) == "fail"
    assert worst([]) is None
    assert skipped("n/a").status == "skip"
