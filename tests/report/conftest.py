"""Report tests open their pages with the ``browser``/``open_report`` fixtures of
``tests/conftest.py`` (one Playwright per test process)."""
