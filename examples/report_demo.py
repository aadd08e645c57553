"""`make report-demo`: the report gallery for the shipped examples, written to reports/.

One page per kind of result (a doctor ladder, a watched training run, a leaderboard, a release
gate, a scaling-law backtest, a label audit), and `reports/ledger.html`, the page
`labcoat report` builds from a ledger that recorded the same doctor run, watched run and
comparison. Every page opens offline.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))

import digits  # noqa: E402
import digits_bugs  # noqa: E402

import labcoat  # noqa: E402
from labcoat import audit, scale, stats  # noqa: E402
from labcoat.report import Page  # noqa: E402
from labcoat.report.build import from_ledger  # noqa: E402
from labcoat.report.sections.watch import watch_section  # noqa: E402
from labcoat.stats.record import record  # noqa: E402

OUT = Path("reports")


def watched_run(ledger, events: Path) -> None:
    """A short digits run under the watch whose learning rate is cut to 0 halfway (an alert)."""
    torch.manual_seed(0)
    X, y = digits.digits_tensors()
    model = digits.MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.watch(model, optimizer, every=1, events=events, ledger=ledger) as w:
        for step in range(300):
            if step == 150:
                optimizer.param_groups[0]["lr"] = 0.0
            idx = torch.randint(len(X), (32,))
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            w.observe(step=step, loss=loss)


def eval_scores(seed: int = 0, n: int = 400):
    """Per-question correctness of three models on one generated eval, 20 subjects."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1, n)
    subject = np.repeat(np.arange(20), n // 20)
    scores = {
        name: (rng.normal(skill - difficulty, 1.0) > 0).astype(float)
        for name, skill in (("big", 0.6), ("medium", 0.5), ("small", -0.1))
    }
    return scores, subject


def main() -> int:
    OUT.mkdir(exist_ok=True)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = labcoat.Ledger(Path(tmp) / "ledger.db")
        healthy = digits.experiment().diagnose(ledger=ledger, progress=False)
        broken = digits_bugs.head_not_in_optimizer().diagnose(ledger=ledger, progress=False)
        healthy.to_html(OUT / "doctor.html")
        broken.to_html(OUT / "doctor-broken.html")

        events = Path(tmp) / "events.jsonl"
        watched_run(ledger, events)
        from labcoat.watch.events import read_events

        Page("labcoat watch").add(watch_section(read_events([events]))).save(OUT / "watch.html")

        scores, subject = eval_scores()
        board = stats.leaderboard(scores, cluster={"big": subject}, n_resamples=500)
        board.to_html(OUT / "leaderboard.html")
        gate = stats.gate(scores["medium"], scores["big"], margin=0.05, cluster=subject)
        gate.to_html(OUT / "gate.html")
        comparison = stats.compare(scores["big"], scores["medium"], subject)
        record(comparison, ledger=ledger, name="big vs medium")

        rng = np.random.default_rng(0)
        N, D = 10 ** rng.uniform(7, 10, 60), 10 ** rng.uniform(9, 12, 60)
        L = (1.8 + 480 * N**-0.35 + 2100 * D**-0.37) * np.exp(rng.normal(0, 0.01, 60))
        scale.backtest(N, D, L, holdout="n", top=12, n_resamples=200, ledger=False).to_html(
            OUT / "scale.html"
        )

        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_predict

        X, y = (t.numpy() for t in digits.digits_tensors())
        y = y.copy()
        y[::60] = (y[::60] + 1) % 10  # 30 planted label flips
        probs = cross_val_predict(
            LogisticRegression(max_iter=500), X, y, cv=5, method="predict_proba"
        )
        audit.label_issues(y, probs, ledger=False).to_html(OUT / "audit.html", examples=X, labels=y)

        from_ledger(ledger, title="labcoat report: a doctor run, a watched run, a comparison").save(
            OUT / "ledger.html"
        )
        ledger.close()
    for page in sorted(OUT.glob("*.html")):
        print(f"{page}  {page.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
