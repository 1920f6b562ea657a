"""``report.html``: the report's sections as one self-contained page, answer first.

The page opens with every section's summary (at most five lines each, as in
``report.txt``), each linking to its section. Each section shows its claims (verdict
and figures), a short summary table and its plots open; the values said once and the
full table sit in collapsed ``<details>`` below them. Every table scrolls sideways in
its own box (``overflow-x: auto``) and its column names may break after an underscore,
so a wide table is never cut at the page's edge. Every plot is embedded as a base64
PNG (``data:`` URI) and the style sheet is inline, so the file opens in any browser,
offline, copied anywhere, with nothing beside it. matplotlib's PNGs are enough here:
interactive plots (plotly, altair) would add a dependency and several MB of JavaScript
per page for hover labels the tables give.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

import pandas as pd

from kernbench.files import write_atomic
from kernbench.report.claims import Claim
from kernbench.report.study import Section

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; }
td { white-space: nowrap; }
th { background: #f3f3f3; vertical-align: bottom; }
.claim { margin: 0.4em 0; } .detail { color: #555; margin-left: 1.5em; font-size: 0.9em; }
.HOLDS { color: #fff; background: #2a7d2a; padding: 1px 6px; border-radius: 3px; }
.DOES-NOT-HOLD { color: #fff; background: #b22; padding: 1px 6px; border-radius: 3px; }
.NOT-TESTED { color: #fff; background: #888; padding: 1px 6px; border-radius: 3px; }
.WITHIN-NOISE { color: #fff; background: #a66f00; padding: 1px 6px; border-radius: 3px; }
pre { background: #f7f7f7; padding: 0.5em; white-space: pre-wrap; font-size: 0.85em; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.5em 0; }
.scroll::-webkit-scrollbar { height: 10px; }
.scroll::-webkit-scrollbar-thumb { background: #bbb; border-radius: 5px; }
.caption { font-size: 0.9em; color: #444; margin: 0.8em 0 0 0; }
details { margin: 0.6em 0; } summary { cursor: pointer; color: #235; }
img, figure.plot svg { max-width: 100%; height: auto; display: block; }
img, figure.plot { margin: 0.8em 0; border: 1px solid #eee; }
.brief { margin: 0.5em 0; } .brief p { margin: 0.1em 0; }
.brief p + p { margin-left: 1.5em; font-size: 0.95em; } .brief p.cases { margin-left: 3em; }
"""


def render_html(header: str, sections: list[Section]) -> str:
    """The whole page."""
    body = [f"<h1>KernBench report</h1><p>{escape(header)}</p>", summary_html(sections)]
    body += [_section(s, n) for n, s in enumerate(sections)]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>KernBench report</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def summary_html(sections: list[Section]) -> str:
    """The summaries before the sections, each one's first line a link to its section."""
    briefs = []
    for n, section in enumerate(sections):
        first, *rest = section.brief or [section.title]
        lines = [f'<p><a href="#section-{n}">{escape(first)}</a></p>']
        lines += [_brief_line(line) for line in rest]
        briefs.append(f'<div class="brief">{"".join(lines)}</div>')
    return f'<section class="summary"><h2>Summary</h2>{"".join(briefs)}</section>'


def _brief_line(line: str) -> str:
    """A summary line; one indented in the text (a finding's cases) indented here too."""
    more = ' class="cases"' if line.startswith(" ") else ""
    return f"<p{more}>{escape(line.strip())}</p>"


def _section(section: Section, n: int) -> str:
    parts = [f'<h2 id="section-{n}">{escape(section.title)}</h2>']
    if section.lines:
        parts.append(f"<pre>{escape(chr(10).join(section.lines))}</pre>")
    parts += [_claim(c) for c in section.claims]
    if section.summary is not None:
        parts.append(f'<p class="caption">{escape(section.summary_title)}</p>')
        parts.append(table_html(section.summary))
    parts += [f"<p>{escape(n)}</p>" for n in section.notes]
    parts += [_image(p) for p in section.plots]
    if section.details:
        text = escape(chr(10).join(section.details))
        parts.append(_details("values the same in every row", f"<pre>{text}</pre>"))
    if section.table is not None:
        rows, cols = section.table.shape
        what = f"the table: {rows} row{'s' * (rows != 1)}, {cols} columns"
        parts.append(_details(what, table_html(section.table)))
    return f"<section>{''.join(parts)}</section>"


def table_html(table: pd.DataFrame) -> str:
    """A formatted table in its own sideways-scrolling box; a column name may break
    after each underscore or dot."""
    head = "".join(f"<th>{_breakable(str(c))}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
        for row in table.itertuples(index=False, name=None)
    )
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _breakable(name: str) -> str:
    return escape(name).replace("_", "_<wbr>").replace(".", ".<wbr>")


def _details(summary: str, content: str) -> str:
    return f"<details><summary>{escape(summary)}</summary>{content}</details>"


def _claim(claim: Claim) -> str:
    verdict = claim.verdict()
    return (
        f'<div class="claim"><span class="{verdict.replace(" ", "-")}">{verdict}</span> '
        f'{escape(claim.text)}<div class="detail">{escape(claim.detail)}</div></div>'
    )


def _image(path: Path) -> str:
    """The plot's SVG inline (its XML prologue dropped), else its PNG as a data URI."""
    svg = path.with_suffix(".svg")
    if svg.is_file():
        text = svg.read_text(encoding="utf-8")
        start = text.find("<svg")
        return f'<figure class="plot" data-name="{escape(path.name)}">{text[start:]}</figure>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{escape(path.name)}" src="data:image/png;base64,{data}">'


def write_html(path: Path, header: str, sections: list[Section]) -> Path:
    write_atomic(path, render_html(header, sections))
    return path
