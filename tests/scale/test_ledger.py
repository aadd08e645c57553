"""Recording fits and predictions in the ledger through its public API."""

from __future__ import annotations

import numpy as np

from labcoat import Ledger, scale

from .conftest import curve_runs


def _fit(**kw):
    x, L = curve_runs()
    return scale.fit(x, None, L, form="curve", n_resamples=30, **kw)


def test_a_fit_is_recorded_with_its_parameters_and_data_fingerprint(tmp_path):
    path = tmp_path / "ledger.db"
    fit = _fit(ledger=str(path))
    # the summary and six diagnostics (scale.choice skipped: no choice for a named form)
    assert fit.ledger["location"].endswith("ledger.db") and len(fit.ledger["findings"]) == 7
    stored = Ledger(path, create=False).findings(source="scale")
    summary = stored[0]
    assert summary.check == "scale.fit"
    assert summary.evidence["params"] == fit.params
    assert (
        isinstance(summary.evidence["data"]["digest"], str) and summary.evidence["data"]["digest"]
    )
    assert {f.check for f in stored[1:]} == {f.check for f in fit.findings}
    # same runs, same fingerprint; one changed loss, another one
    again = _fit(ledger=str(path))
    x, L = curve_runs()
    L[0] *= 1.01
    changed = scale.fit(x, None, L, form="curve", n_resamples=0, ledger=str(path))
    found = [f for f in Ledger(path).findings(source="scale") if f.check == "scale.fit"]
    assert (
        found[0].evidence["data"]["digest"]
        == found[1].evidence["data"]["digest"]
        != found[2].evidence["data"]["digest"]
    )
    assert again.params == fit.params and changed.params != fit.params


def test_no_ledger_is_created_unless_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABCOAT_LEDGER", str(tmp_path / "absent.db"))
    fit = _fit(ledger=None)
    assert fit.ledger is None and not (tmp_path / "absent.db").exists()
    Ledger(tmp_path / "absent.db")  # now the project keeps one: None records there
    assert _fit(ledger=None).ledger is not None
    assert _fit(ledger=False).ledger is None


def test_a_prediction_is_written_before_the_run_and_judged_after(tmp_path):
    path = tmp_path / "ledger.db"
    fit = _fit(ledger=False)
    entry, prediction = fit.record_prediction(1e6, ledger=str(path))
    stored = Ledger(path).entries(tag="scale")
    assert [e.id for e in stored] == [entry.id]
    assert "x=1e+06" in stored[0].title
    lo, hi = prediction.interval[0][0], prediction.interval[1][0]
    assert f"[{lo:.4g}, {hi:.4g}]" in stored[0].prediction
    observed = 2 + 50 * 1e6**-0.5
    verdict = prediction.verdict(observed)
    assert verdict == "confirmed"
    resolved = Ledger(path).resolve(entry, result=f"final loss {observed:.4g}", verdict=verdict)
    assert resolved.verdict == "confirmed"
    assert np.isclose(prediction.loss[0], observed, rtol=0.02)
