"""`make demo`: the doctor on a planted bug and on its healthy twin, on scikit-learn's digits.

Exits 0 when the doctor behaved as expected: every planted bug stopped the ladder at its layer,
and the healthy twin came out with no failing check.
"""

import sys
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).parent))

import digits  # noqa: E402
import digits_bugs  # noqa: E402

console = Console(highlight=False)


def main() -> int:
    ok = True
    console.rule("healthy twin: examples/digits.py")
    healthy = digits.experiment().diagnose(run_all=True)
    console.print(healthy)
    ok &= healthy.ok

    shown = "head_not_in_optimizer"
    console.rule(f"planted bug: examples/digits_bugs.py:{shown}")
    report = getattr(digits_bugs, shown)().diagnose()
    console.print(report)
    ok &= _expect(shown, report)

    console.rule("the other planted bugs")
    for name in digits_bugs.EXPECTED_LAYER:
        if name != shown:
            report = getattr(digits_bugs, name)().diagnose()
            console.print(f"[bold]{name}[/]: {report.summary()}")
            ok &= _expect(name, report)

    console.rule()
    verdict = (
        "[bold green]the doctor found every planted bug at its layer and passed the healthy twin[/]"
    )
    console.print(verdict if ok else "[bold red]the doctor did not behave as expected[/]")
    return 0 if ok else 1


def _expect(name: str, report) -> bool:
    expected = digits_bugs.EXPECTED_LAYER[name]
    if report.failed_layer != expected:
        console.print(
            f"[red]{name}: expected the {expected} layer to fail, got {report.failed_layer}[/]"
        )
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
