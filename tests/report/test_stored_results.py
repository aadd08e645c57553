"""``labcoat report`` on a ledger holding every engine's results: a section for each engine,
and each stored result drawn by its own ``section`` from its record, never the fallback that
lists a record's findings because its section needs the live result.

The engines come from :data:`labcoat.engines.DECLARED` and the results from
``tests/test_results_contract.py``'s factories (one per result class found by subclass), so a
new engine or result class is held to this from its first day.
"""

from __future__ import annotations

import re

import pytest

import labcoat
from labcoat import engines
from tests.test_results_contract import CLASSES, SLOW, build

#: what the report draws when a stored result's section cannot read its record
FALLBACK = "cannot be drawn from its record"


def _fill(path, kinds):
    with labcoat.Ledger(path) as ledger:
        for kind in kinds:
            assert labcoat.ledger.record(build(kind), ledger, name=kind) is not None


def _page(cli, tmp_path, kinds) -> str:
    _fill(tmp_path / "l.db", kinds)
    out = tmp_path / "report.html"
    done = cli("report", "--ledger", tmp_path / "l.db", "-o", out)
    assert done.code == 0, done.err
    return out.read_text()


def _drawn(html: str, kind: str) -> str:
    """What the page draws under the heading of stored result ``kind``, up to its section's
    end."""
    head = f"<h3>{kind}</h3>"
    assert head in html, f"no stored {kind} result drawn on the page"
    return html.split(head, 1)[1].split("</section>", 1)[0]


def test_a_ledger_with_every_engines_results_gets_a_section_per_engine_each_result_its_own(
    cli, tmp_path
):
    kinds = sorted(k for k in CLASSES if k not in SLOW)
    html = _page(cli, tmp_path, kinds)
    assert len(engines.DECLARED) == len(engines.names())
    for engine in engines.engines():
        assert re.search(rf'id="{engine.name}-run-\d+', html), f"no {engine.name} section"
        ours = [k for k in kinds if CLASSES[k].engine == engine.name]
        assert ours, f"no result of {engine.name} recorded"
    assert FALLBACK not in html, re.findall(rf"stored (\S+) result {FALLBACK}", html)
    for kind in kinds:
        assert _drawn(html, kind).strip(), f"{kind}: drawn empty"


@pytest.mark.slow
def test_the_slow_scaling_results_redraw_from_their_records_too(cli, tmp_path):
    html = _page(cli, tmp_path, sorted(SLOW))
    assert FALLBACK not in html, re.findall(rf"stored (\S+) result {FALLBACK}", html)
