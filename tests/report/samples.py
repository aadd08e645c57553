"""Report inputs as plain data: a doctor ladder (healthy or failing) and a watched run's events."""

from __future__ import annotations

import math

from labcoat.doctor.result import Diagnosis
from labcoat.findings import Finding


def _f(check: str, layer: str, status: str, message: str, **evidence) -> Finding:
    return Finding(
        check=check,
        layer=layer,
        status=status,
        message=message,
        evidence=evidence,
        falsifies=f"{check} is broken",
        predicts=f"{check} holds",
    )


def ladder(fail_at: str | None = None) -> Diagnosis:
    """Eight data and thirteen model checks, then update; ``fail_at="update"`` plants a failure
    there (so the failing layer sits below a long ladder), else the controls pass too."""
    findings = [_f(f"data.check{i}", "data", "pass", "fine") for i in range(8)]
    findings += [_f(f"model.check{i}", "model", "pass", "fine") for i in range(13)]
    findings.append(
        _f(
            "update.optimizer.coverage",
            "update",
            "fail" if fail_at == "update" else "pass",
            "2 of 6 trainable parameters are in no optimizer group: head.weight, head.bias"
            if fail_at == "update"
            else "every trainable parameter is in the optimizer",
            missing=["head.weight", "head.bias"] if fail_at == "update" else [],
        )
    )
    if fail_at == "update":
        return Diagnosis(
            findings,
            ["data", "model", "update"],
            ["overfit", "shuffle"],
            timings={"data": 0.1, "model": 0.02, "update": 0.03},
        )
    curve = [2.3 * math.exp(-i / 4) + 0.05 for i in range(12)]
    findings.append(
        _f(
            "overfit.batch",
            "overfit",
            "pass",
            "memorised 20 examples",
            steps=68,
            loss_curve=curve,
            loss_floor=0.0,
            chance_loss=2.3,
        )
    )
    findings.append(
        _f(
            "shuffle.labels",
            "shuffle",
            "pass",
            "shuffled copies score 0.12; chance is 0.1",
            shuffled_scores=[0.1 + 0.01 * (i % 5) for i in range(19)],
            real_score=0.81,
            chance=0.1,
            score="accuracy",
        )
    )
    selftest = {
        "ok": True,
        "caught": 2,
        "mutants": 2,
        "results": [
            {"mutant": "loss × 0", "caught": True, "caught_by": ["model.grad.coverage"]},
            {"mutant": "output detached", "caught": True, "caught_by": ["model.grad.coverage"]},
        ],
    }
    return Diagnosis(
        findings,
        ["data", "model", "update", "overfit", "shuffle"],
        timings={"shuffle": 1.2},
        extras={"selftest": selftest},
    )


def watch_events(steps: int = 5000, alerts_at: tuple[int, ...] = (1200, 3400)) -> list[dict]:
    """A long run's sampled loss (with a one-step spike at 2500) and two alerts."""
    events = []
    for s in range(steps):
        loss = 2.0 * math.exp(-s / 1500) + 0.1 + (25.0 if s == 2500 else 0.0)
        events.append(
            {
                "kind": "series",
                "step": s,
                "rank": 0,
                "value": loss,
                "loss": loss,
                "losses": 1,
                "grad_norm": 1.0 + 0.1 * math.sin(s) if s % 10 == 0 else None,
                "update_ratio": None,
                "lr": 1e-3,
            }
        )
    for i, s in enumerate(alerts_at):
        events.append(
            {
                "kind": "spike",
                "step": s,
                "rank": 0,
                "severity": "warn",
                "subject": "loss",
                "value": 9.0,
                "message": f"loss spiked {i}",
                "evidence": {"z": 9.0},
            }
        )
    return events


def learning_curve(bootstrap: int = 20):
    """A 1-D learning curve fitted on 12 generated runs, and a backtest of its largest 4."""
    import numpy as np

    from labcoat import scale

    x = np.logspace(6, 9, 12)
    y = (1.7 + 300 * x**-0.3) * (1 + 0.01 * np.sin(np.arange(12)))
    fit = scale.fit(x, None, y, form="curve", bootstrap=bootstrap, ledger=False)
    held = scale.backtest(
        x, None, y, form="curve", holdout="n", top=4, bootstrap=bootstrap, ledger=False
    )
    return fit, held


def digits_audit():
    """Digits with 12 planted label flips, audited with out-of-fold logistic-regression
    probabilities, and the first 200 rows against themselves plus noise (near duplicates)."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    from labcoat import audit

    X, y = load_digits(return_X_y=True)
    X, y = X[:600] / 16.0, y[:600].copy()
    flipped = np.arange(0, 600, 50)
    y[flipped] = (y[flipped] + 3) % 10
    probs = cross_val_predict(LogisticRegression(max_iter=300), X, y, cv=3, method="predict_proba")
    issues = audit.label_issues(y, probs, ledger=False)
    other = X[:40] + np.random.default_rng(0).normal(0, 0.01, (40, 64))
    dups = audit.duplicates(X[100:300], other, kind="tensor", ledger=False)
    return X, y, issues, X[100:300], other, dups
