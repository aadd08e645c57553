"""Self-contained HTML reports: one page per doctor run, training run, comparison, fit or ledger.

A :class:`Page` holds sections; each section builder turns one kind of labcoat result (plain
data) into HTML with inline SVG charts. Nothing on a page is fetched when it opens.
"""

from labcoat.report.page import Page, Section

__all__ = ["Page", "Section"]
