"""A section's summary: at most five lines, read before anything else (issue 55).

The report opens with one summary per section (``report.txt``, ``report.html``) and the
terminal prints little more, so a reader learns the verdicts without scrolling through
tables. A study's summary is built from its claims alone: line 1 says what was swept,
how many configurations and how many claims got each verdict; up to four more name the
findings (:func:`findings`, or a study's own hook). Verdicts are counted by the strings
:meth:`Claim.verdict` returns, never by a fixed list, so a new verdict is counted and
named without a change here.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from kernbench.report.claims import Claim
from kernbench.report.formatting import short_name
from kernbench.report.tables import varying_config

WIDTH = 100  # columns, as the rest of the report
INDENT = "  "  # before every summary line but the first
MOST_LINES = 5  # a section's summary, its first line included
HOLDS = "HOLDS"  # the verdict that is no finding: listed only when every claim holds
FIRST = "DOES NOT HOLD"  # the verdict a reader looks for first

Findings = Callable[[pd.DataFrame, list[Claim]], list[str]]


def verdict_counts(claims: Sequence[Claim]) -> dict[str, int]:
    """Claims per verdict string: HOLDS, DOES NOT HOLD, then any other (not tested, a
    newer verdict) as they first appear."""
    counts = Counter(c.verdict() for c in claims)
    return dict(sorted(counts.items(), key=lambda item: (item[0] != HOLDS, importance(item[0]))))


def each_verdict(claims: Sequence[Claim]) -> str:
    """``6 HOLDS, 14 DOES NOT HOLD``."""
    return ", ".join(f"{n} {verdict}" for verdict, n in verdict_counts(claims).items())


def counts_text(claims: Sequence[Claim]) -> str:
    """``20 claims: 6 HOLDS, 14 DOES NOT HOLD`` (``no claims`` for none)."""
    if not claims:
        return "no claims"
    return f"{len(claims)} claim{'s' * (len(claims) != 1)}: {each_verdict(claims)}"


def importance(verdict: str) -> int:
    """The order findings are named in: does not hold, then any verdict but HOLDS (not
    tested, a newer one), then HOLDS."""
    return 0 if verdict == FIRST else 2 if verdict == HOLDS else 1


def headline(title: str, table: pd.DataFrame, claims: Sequence[Claim]) -> str:
    """Line 1: the study, its configurations and what varies among them, the verdict
    counts; the swept keys by name when they fit in :data:`WIDTH`, else their number
    (the counts are never cut)."""
    keys = [short_name(k) for k in varying_config(table)]
    configs = f"{len(table)} configuration{'s' * (len(table) != 1)}"
    plural = "s" * (len(keys) != 1)
    over = [f" over {', '.join(keys)}", f" over {len(keys)} swept key{plural}"] if keys else []
    for swept in [*over, ""]:
        line = f"{title}: {configs}{swept}; {counts_text(claims)}"
        if len(line) <= WIDTH:
            return line
    return line


@dataclass(frozen=True)
class Finding:
    """Claims of one verdict that say one thing (``statement``) of different cases (a
    traffic case, an address model); a claim alone has its whole text and no case."""

    verdict: str
    statement: str
    cases: tuple[str, ...] = ()

    @property
    def claims(self) -> int:
        return max(len(self.cases), 1)

    def head(self) -> str:
        return f"{self.verdict}: {self.statement}"

    def inline(self) -> str:
        """The head with ``, in N cases: `` to list the cases after."""
        return f"{self.head()}, {self.tag()}"

    def tag(self) -> str:
        return f"in {len(self.cases)} cases: "


def findings(table: pd.DataFrame, claims: list[Claim]) -> list[str]:
    """The default for a study's summary hook: up to four lines naming the claims that
    do not hold (then any other verdict but HOLDS; the holding ones only when every
    claim holds). Claims that say one thing of different cases are one finding
    (:func:`grouped`): ``DOES NOT HOLD: <the statement>, in 8 cases: hotspot, aligned;
    local, small; ...``, its cases on the lines the other findings leave
    (:func:`allot`), ``+N more`` where they run out."""
    shown = grouped([c for c in claims if c.verdict() != HOLDS] or claims)
    room = MOST_LINES - 1
    if len(shown) > room:
        rest = shown[room - 1 :]
        named = [line for finding in shown[: room - 1] for line in _lines(finding, 0)]
        counts: Counter[str] = Counter()
        for finding in rest:
            counts[finding.verdict] += finding.claims
        each = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        return [*named, f"and {sum(counts.values())} more claims: {each}"]
    extra = allot([_case_lines(f) for f in shown], room - len(shown))
    return [line for f, k in zip(shown, extra, strict=True) for line in _lines(f, k)]


def grouped(claims: Sequence[Claim]) -> list[Finding]:
    """The claims as findings, the most important verdict first, else in the claims'
    order. A claim's case is the text before its first ": " or before its last
    (``VA: hotspot, aligned: <statement>``): whichever makes fewer findings."""
    splits = [_grouped(claims, last) for last in (False, True)]
    return min(splits, key=len)


def allot(needs: list[int], room: int) -> list[int]:
    """``room`` lines shared out: each asker gets as many as it needs, those needing
    more sharing what the others leave equally, so one long list cannot crowd out the
    next (the findings' case lines, the terminal's claim lines)."""
    given = [0] * len(needs)
    order = sorted(range(len(needs)), key=lambda i: needs[i])
    left = max(room, 0)
    for done, i in enumerate(order):
        given[i] = min(needs[i], left // (len(order) - done))
        left -= given[i]
    return given


def section_summary(
    title: str, table: pd.DataFrame, claims: list[Claim], hook: Findings = findings
) -> list[str]:
    """A study section's summary: :func:`headline`, then what ``hook`` says (at most four
    lines, each cut to fit :data:`WIDTH` after its indent). The counts line is always
    ours, so every summary holds the same counts whatever a study's hook says."""
    said = [fit(line, WIDTH - len(INDENT)) for line in hook(table, claims)]
    return [headline(title, table, claims), *said[: MOST_LINES - 1]]


def listing(prefix: str, items: Sequence[str], width: int, sep: str = "; ") -> str | None:
    """``prefix`` and as many of ``items`` as fit in ``width``, then ``+N more``; None
    when not even one fits."""
    for k in range(len(items), 0, -1):
        more = f"{sep}+{len(items) - k} more" if k < len(items) else ""
        line = prefix + sep.join(items[:k]) + more
        if len(line) <= width:
            return line
    return None


def wrapped(items: Sequence[str], width: int, most: int, sep: str = "; ") -> list[str]:
    """``items`` joined by ``sep`` on lines of ``width``; past ``most`` lines, the last
    one ends in ``+N more``. An item wider than a line is cut (:func:`fit`)."""
    packed: list[list[str]] = []
    for item in items:
        if packed and len(sep.join([*packed[-1], item])) <= width:
            packed[-1].append(item)
        else:
            packed.append([item])
    lines = [fit(sep.join(line), width) for line in packed[: max(most, 0)]]
    if len(packed) > most > 0:
        rest = items[sum(map(len, packed[: most - 1])) :]
        lines[-1] = listing("", rest, width, sep) or f"{len(rest)} more"
    return lines


def fit(line: str, width: int = WIDTH) -> str:
    """``line`` cut at a word to ``width`` columns (``...`` where it was cut)."""
    return line if len(line) <= width else textwrap.shorten(line, width, placeholder=" ...")


def _split(text: str, last: bool) -> tuple[str, str]:
    """``(statement, case)``: a claim's text after and before its first (or last) ": ";
    the whole text and no case when it has none."""
    case, sep, statement = text.rpartition(": ") if last else text.partition(": ")
    return (statement, case) if sep else (text, "")


def _grouped(claims: Sequence[Claim], last: bool) -> list[Finding]:
    groups: dict[tuple[str, str], list[Claim]] = {}
    for claim in claims:
        groups.setdefault((claim.verdict(), _split(claim.text, last)[0]), []).append(claim)
    out = []
    for (verdict, statement), members in groups.items():
        if len(members) == 1:
            out.append(Finding(verdict, members[0].text))
        else:
            out.append(Finding(verdict, statement, tuple(_split(c.text, last)[1] for c in members)))
    return sorted(out, key=lambda f: importance(f.verdict))


def _lines(finding: Finding, extra: int) -> list[str]:
    """A finding on 1 + at most ``extra`` lines: its head, then its cases on the same
    line when they fit, else on the ``extra`` lines below; with no line for them, how
    many cases there are."""
    width = WIDTH - len(INDENT)
    if not finding.cases:
        return [fit(finding.head(), width)]
    if extra <= 0 or _case_lines(finding) == 0:
        listed = listing(finding.inline(), finding.cases, width)
        count = f" (in {len(finding.cases)} cases)"
        return [listed or fit(finding.head(), width - len(count)) + count]
    tag = finding.tag()
    below = wrapped(finding.cases, width - len(INDENT) - len(tag), extra)
    below = [tag + below[0], *(" " * len(tag) + line for line in below[1:])]
    return [fit(finding.head(), width), *(INDENT + line for line in below)]


def _case_lines(finding: Finding) -> int:
    """The lines below its head a finding needs to name every case (0: none, or they
    fit on the head's line)."""
    width = WIDTH - len(INDENT)
    if not finding.cases or len(finding.inline() + "; ".join(finding.cases)) <= width:
        return 0
    inner = width - len(INDENT) - len(finding.tag())
    return len(wrapped(finding.cases, inner, len(finding.cases)))
