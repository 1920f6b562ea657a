"""Short first (issue 55): ``kernbench-report`` prints the verdicts and where the report
is, in at most 40 lines (the main job's whole report was 651); ``report.txt`` and
``report.html`` open with a summary of at most five lines per section, its verdicts
counted from the section's claims, then every section in full, every table row.

A real sweep of the main job's preset, narrowed to 24 points of the small topology
(:data:`tests.test_tutorial_files.NARROWED`), and the report on it run in
subprocesses, as a user runs them; the main job's grid (:func:`tests.
test_report_legible.main_job_rows`) and a three-address sweep with a second study
(many claims) in-process; and the terminal's line budget on made-up sections of any
size.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from kernbench.report import document
from kernbench.report.claims import Claim
from kernbench.report.cli import main
from kernbench.report.document import (
    TERMINAL_LINES,
    PlotChoice,
    build,
    claim_text,
    render_terminal,
)
from kernbench.report.study import STUDIES, Section, Study, study_section
from kernbench.report.summary import MOST_LINES, WIDTH, findings
from kernbench.results import write_rows
from tests.test_report import ADR_BYTES, gqa_rows
from tests.test_report_address_models import booked
from tests.test_report_address_models import sweep as address_sweep
from tests.test_report_legible import main_job_rows
from tests.test_sweep import run_sweep
from tests.test_tutorial_files import NARROWED, REPORT


@dataclass(frozen=True)
class Noisy(Claim):
    """A claim with a verdict the report has never seen (issue 55 plans WITHIN NOISE)."""

    def verdict(self) -> str:
        return "WITHIN NOISE"


@pytest.fixture
def no_plots(monkeypatch) -> None:
    """The report without its plots (their own tests draw them): in seconds, not 20."""
    plotless = tuple(dataclasses.replace(s, plot=lambda table, out_dir: []) for s in STUDIES)
    monkeypatch.setattr(document, "STUDIES", plotless)
    monkeypatch.setattr(document, "_general_plot", lambda *args: [])


@pytest.fixture(scope="module")
def main_job_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """``kernbench -m +experiment=bw_equivalence`` on 24 points of the small topology,
    then ``kernbench-report`` on it: the sweep directory and the report's process."""
    tmp_path = tmp_path_factory.mktemp("main_job")
    params = [f"hydra.sweeper.params.{k}={v}" for k, v in NARROWED.items()]
    proc, sweep = run_sweep(
        tmp_path, "+experiment=bw_equivalence", "topology=small", *params,
        "workload.bytes_per_pe=131072", "cache=false",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    report = subprocess.run([sys.executable, "-c", REPORT, str(sweep)], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=300, check=False)  # fmt: skip
    return sweep, report


def test_the_terminal_has_the_verdicts_and_where_the_report_is(main_job_sweep):
    sweep, report = main_job_sweep
    assert (report.returncode, report.stderr) == (0, "")
    lines = report.stdout.splitlines()
    assert len(lines) <= TERMINAL_LINES, report.stdout
    assert lines[0] == f"{sweep}: 24 rows (24 ok)"
    assert lines[-2:] == [
        f"full report, every claim's figures and every row: {sweep / 'report.txt'}",
        f"the same on one page, plots inline: {sweep / 'report.html'}",
    ]
    sections = build(pd.read_parquet(sweep / "results.parquet"), sweep, PlotChoice())
    claims = [c for s in sections for c in s.claims]
    assert claims and len(lines) < TERMINAL_LINES  # room for every claim: each on a line
    for claim in claims:
        assert f"  [{claim.verdict()}] {claim.text}" in lines
        assert not claim.detail or claim.detail not in report.stdout  # report.txt's
    assert "== " not in report.stdout  # no section in full


def test_report_txt_keeps_every_row_and_claim_after_the_summaries(main_job_sweep, tmp_path):
    sweep, _ = main_job_sweep
    text = (sweep / "report.txt").read_text()
    sections = build(pd.read_parquet(sweep / "results.parquet"), tmp_path, PlotChoice())
    assert [s.title for s in sections] == ["bandwidth equivalence (12 configurations)",
                                           "all points (24 rows, 24 ok)"]  # fmt: skip
    summary = text[: text.index("\n== bandwidth equivalence")]
    assert summary.splitlines()[2] == "== summary =="
    for section in sections:
        assert section.brief and section.brief[0] in summary
        assert section.table.to_string(index=False) in text  # every row of every table
        assert all(claim_text(c) in text for c in section.claims)
    general = sections[-1].table.to_string(index=False).splitlines()
    assert len(general) == 1 + 24


def test_each_study_summary_is_five_lines_with_its_verdict_counts(tmp_path, no_plots):
    """The main job's grid (20 claims) and three address models with a second study (30
    claims): every summary at most five lines of at most 100 columns, its first line
    the claims' count and each verdict's, as Claim.verdict() says them."""
    both = pd.concat([address_sweep(fabrics=("fair",)),
                      address_sweep(fabrics=("reservation",), ratio=booked)])  # fmt: skip
    tables = [pd.DataFrame(main_job_rows()), pd.DataFrame([*both.to_dict("records"),
                                                           *gqa_rows(ADR_BYTES)])]  # fmt: skip
    studies = 0
    for table in tables:
        for section in build(table, tmp_path, PlotChoice())[:-1]:
            studies += 1
            assert 1 <= len(section.brief) <= MOST_LINES, section.brief
            assert all(len(line) <= WIDTH - 2 * (i > 0) for i, line in enumerate(section.brief))
            assert counts_said(section.brief[0]) == Counter(c.verdict() for c in section.claims)
            assert f"; {len(section.claims)} claims: " in section.brief[0]
    assert studies == 3


def counts_said(line: str) -> Counter:
    """``{verdict: n}`` of a summary's first line (``...; 20 claims: 7 HOLDS, 13 DOES
    NOT HOLD``)."""
    said = line.rsplit(" claims: ", 1)[1].split(", ")
    return Counter({part.split(" ", 1)[1]: int(part.split(" ", 1)[0]) for part in said})


def fake_study(claims: list[Claim], **hook) -> Section:
    """A study whose check returns ``claims``, on a four-row table, its section."""
    study = Study("made up", lambda df: df, lambda t: claims, lambda t, d: [], **hook)
    table = pd.DataFrame({"workload.access_bytes": [512, 4096, 65536, 65792]})
    section = study_section(study, table, Path("."))
    assert section is not None and not section.notes, section
    return section


def test_a_new_verdict_is_counted_and_named_without_a_change():
    claims = [Claim(f"{c}: x agrees", False, "") for c in "abc"]
    claims += [Noisy("y agrees", None, ""), Claim("z agrees", True, "")]
    brief = fake_study(claims).brief
    assert brief == [
        "made up: 4 configurations over access_bytes; 5 claims:"
        " 1 HOLDS, 3 DOES NOT HOLD, 1 WITHIN NOISE",
        "DOES NOT HOLD: x agrees, in 3 cases: a; b; c",
        "WITHIN NOISE: y agrees",
    ]


def test_every_holding_claim_is_named_when_nothing_else_is_found():
    brief = fake_study([Claim("x", True, ""), Claim("y", True, "")]).brief
    assert brief[1:] == ["HOLDS: x", "HOLDS: y"]


def test_a_studys_own_summary_says_the_findings_in_four_lines_at_most():
    said = [f"finding {n}" for n in range(7)]
    section = fake_study([Claim("x", False, "")], summary=lambda table, claims: said)
    head = "made up: 4 configurations over access_bytes; 1 claim: 1 DOES NOT HOLD"
    assert section.brief == [head, *said[:4]]


def test_past_four_findings_the_fourth_line_counts_the_rest():
    claims = [Claim(f"claim {n}", n % 2 == 0, "") for n in range(12)]
    claims.append(Claim("untested", None, ""))
    lines = findings(pd.DataFrame(), claims)
    assert lines == ["DOES NOT HOLD: claim 1", "DOES NOT HOLD: claim 3", "DOES NOT HOLD: claim 5",
                     "and 4 more claims: 3 DOES NOT HOLD, 1 NOT TESTED"]  # fmt: skip


def test_many_cases_run_onto_the_lines_left_and_say_how_many_more():
    claims = [Claim(f"case {n}: the mappings agree", False, "") for n in range(40)]
    lines = findings(pd.DataFrame(), claims)
    assert lines[0] == "DOES NOT HOLD: the mappings agree"
    assert lines[1].startswith("  in 40 cases: case 0; case 1; ")
    assert len(lines) == 4 and lines[-1].endswith(" more")
    listed = sum(line.count("case ") for line in lines[1:])
    assert lines[-1].endswith(f"; +{40 - listed} more")
    assert all(len(line) <= WIDTH - 2 for line in lines)


def section_of(n: int, title: str = "study") -> Section:
    """A study section of ``n`` claims, every third one that does not hold."""
    claims = [Claim(f"claim {title} {i}", i % 3 != 0, f"detail {i}") for i in range(n)]
    brief = [f"{title}: {n} claims", "finding"]
    return Section(title, brief=brief, claims=claims)


@pytest.mark.parametrize("limit", [TERMINAL_LINES, TERMINAL_LINES - 1])
def test_the_terminal_keeps_to_its_lines_whatever_the_claims(limit):
    """One study then two, of 0 to 60 claims each: never more than ``limit`` lines;
    every claim on a line when they fit, else exactly ``limit`` lines, the claims that
    do not hold before any that holds, each study ending in how many more report.txt
    has; every section's summary always shown."""
    general = Section("all points", brief=["all points: 3 rows", "plots beside report.txt: a.png"])
    for studies in (1, 2):
        for n in range(61):
            sections = [*(section_of(n + k, str(k)) for k in range(studies)), general]
            lines = render_terminal("header", sections, Path("/d"), limit).splitlines()
            claims = sum(len(s.claims) for s in sections)
            fixed = 2 + 2 * studies + 2 + 3
            assert len(lines) == min(fixed + claims, limit), (studies, n)
            for section in sections:
                assert all(line in lines for line in section.brief[:1])
                check_claims_shown(section, lines)


def check_claims_shown(section: Section, lines: list[str]) -> None:
    shown = [c for c in section.claims if f"  [{c.verdict()}] {c.text}" in lines]
    more = [line for line in lines if line.startswith("  +")]
    if len(shown) == len(section.claims):
        return
    hidden = Counter(c.verdict() for c in section.claims if c not in shown)
    each = ", ".join(f"{n} {v}" for v, n in sorted(hidden.items(), key=lambda i: i[0] != "HOLDS"))
    assert f"  +{sum(hidden.values())} more in report.txt: {each}" in more
    held = [c for c in shown if c.holds]
    assert not held or all(c in shown for c in section.claims if not c.holds)


def test_a_bare_report_names_its_directory_within_the_40_lines(
    tmp_path, monkeypatch, capsys, no_plots
):
    """Three address models and a second study (30 claims): the terminal fills its 40
    lines exactly, the first naming the directory a bare kernbench-report chose."""
    both = pd.concat([address_sweep(fabrics=("fair",)),
                      address_sweep(fabrics=("reservation",), ratio=booked)])  # fmt: skip
    sweep = tmp_path / "outputs" / "sweep"
    write_rows([*both.to_dict("records"), *gqa_rows(ADR_BYTES)], sweep / "results.parquet")
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("kernbench-report: the newest sweep or run with ok rows: outputs")
    assert len(lines) == TERMINAL_LINES, "\n".join(lines)
    assert any(line.startswith("  +") and line.endswith(" HOLDS") for line in lines)
    assert main(["outputs/sweep", "--strict"]) == 2  # a claim that does not hold
    assert len(capsys.readouterr().out.splitlines()) == TERMINAL_LINES


def test_report_html_opens_with_the_summaries_linked_to_their_sections(tmp_path, no_plots):
    write_rows(main_job_rows(), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    summary = page.index('<section class="summary"><h2>Summary</h2>')
    assert summary < page.index('<h2 id="section-0">bandwidth equivalence')
    assert (
        summary
        < page.index('<a href="#section-0">bandwidth equivalence: ')
        < page.index('<a href="#section-1">all points: 336 rows, 336 ok, ')
        < page.index('<h2 id="section-0">')
    )
