"""Which tests plant a bug each registered check must catch, and which healthy twin it must pass.

``CONTRACT`` maps a check key ("<engine>.<check id>", the engine written once: "audit.labels")
to the test functions (or single cases) that show it: ``planted`` ones whose setup has the bug
and assert the check fails (or warns, for a check of warn severity), ``healthy`` ones whose setup
is sound and assert it passes. New tests say the same with a marker instead, beside the test:
``@pytest.mark.check("doctor.data.finite", planted=True)``. tests/test_contract.py requires both
kinds for every check in ``labcoat.findings.registries()``, among the tests of the fast tier.
"""

from __future__ import annotations

CONTRACT: dict[str, dict[str, list[str]]] = {}
