"""A report page: plain data (a title and sections), written as one self-contained HTML file.

Nothing on the page is fetched: styles are inline, charts are inline SVG, there are no scripts
or fonts to load. The page follows the reader's light or dark preference and reflows to phone
width. A :class:`Page` renders inline in Jupyter (``_repr_html_``).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

#: status → (mark, css class), shared by every section
STATUS = {
    "pass": ("✓", "pass"),
    "warn": ("!", "warn"),
    "fail": ("✗", "fail"),
    "skip": ("–", "skip"),
}

CSS = """
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #5b6470; --line: #d8dde3;
  --card: #f6f8fa; --pass: #1a7f37; --warn: #9a6700; --fail: #cf222e; --skip: #6e7781; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9aa5b1;
  --line: #30363d; --card: #161b22; --pass: #3fb950; --warn: #d29922; --fail: #f85149; --skip: \
#8b949e; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 1rem; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.5rem; margin: .2rem 0 .6rem; } h2 { font-size: 1.2rem; margin: 1.6rem 0 .5rem;
  border-bottom: 1px solid var(--line); padding-bottom: .2rem; } h3 { font-size: 1rem; margin: \
1rem 0 .3rem; }
.meta, .muted { color: var(--muted); font-size: .9rem; }
.verdict { padding: .6rem .8rem; border-radius: 6px; border: 1px solid var(--line); background: \
var(--card);
  margin: .5rem 0 1rem; font-weight: 600; }
.verdict.fail { border-color: var(--fail); } .verdict.pass { border-color: var(--pass); }
.pass { color: var(--pass); } .warn { color: var(--warn); } .fail { color: var(--fail); } .skip { \
color: var(--skip); }
.layer { border: 1px solid var(--line); border-radius: 6px; margin: .35rem 0; background: \
var(--card); }
.layer > summary { padding: .4rem .7rem; cursor: pointer; font-weight: 600; }
.layer.failed { border-color: var(--fail); }
.finding { padding: .25rem .7rem .25rem 1.6rem; border-top: 1px solid var(--line); }
.finding > summary { cursor: pointer; list-style-position: outside; }
.finding code { font-size: .85rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line); \
vertical-align: top; }
.scroll { overflow-x: auto; }
.evidence td:first-child { color: var(--muted); white-space: nowrap; }
.chart { margin: .5rem 0; color: var(--fg); } .chart svg { width: 100%; height: auto; max-width: \
760px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: .8rem; }
@media (max-width: 600px) { body { padding: .5rem; font-size: 14px; } th, td { padding: .2rem \
.3rem; } }
"""


def esc(value: object) -> str:
    """Text for HTML, escaped."""
    return html.escape(str(value), quote=True)


@dataclass
class Section:
    """One titled part of a page; ``body`` is HTML made by the section builders."""

    title: str
    body: str
    #: an anchor for links and tests
    id: str = ""

    def to_html(self) -> str:
        anchor = f' id="{esc(self.id)}"' if self.id else ""
        return (
            f'<section{anchor} class="report-section"><h2>{esc(self.title)}</h2>\n{self.body}'
            "\n</section>"
        )


@dataclass
class Page:
    """A whole report: a title and its sections, in order."""

    title: str
    sections: list[Section] = field(default_factory=list)
    subtitle: str = ""

    def add(self, section: Section) -> "Page":
        self.sections.append(section)
        return self

    def to_html(self) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        from labcoat._version import __version__

        body = (
            "\n".join(s.to_html() for s in self.sections)
            or '<p class="muted">Nothing recorded yet.</p>'
        )
        sub = f'<p class="meta">{esc(self.subtitle)}</p>' if self.subtitle else ""
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            # no request may leave the page: forbid every fetch, allow only inline styles and data
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">"
            f"<title>{esc(self.title)}</title><style>{CSS}</style></head>\n<body>"
            f"<h1>{esc(self.title)}</h1>{sub}\n{body}\n"
            f'<p class="meta">labcoat {esc(__version__)} · {stamp}</p></body></html>\n'
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the page; returns the path written."""
        from labcoat.outputs import check_writable

        out = check_writable(path, "-o/--html")
        out.write_text(self.to_html(), encoding="utf-8")
        return out

    def _repr_html_(self) -> str:  # Jupyter shows the page inline
        return self.to_html()
