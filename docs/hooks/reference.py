"""MkDocs hook: the reference pages, made from the code at every build.

Nothing here is a copy that can go stale: the key reference is what ``kernbench
--keys`` prints (:func:`kernbench.cli.help.key_rows`: the schema's fields with their
meanings, types, units, limits and the defaults ``conf/`` composes to; then
:func:`kernbench.cli.keys.setting_keys`: the sweeper's and launcher's keys from
``kernbench/sweep/settings.py``, Optuna's ``n_trials``, ``KERNBENCH_PURE``), the group and
preset pages read ``conf/`` and ``experiments/``, the column reference reads
:mod:`kernbench.config.columns` and :mod:`kernbench.results` (their meanings from
``columns.yaml`` beside this file, which the build holds to those columns), and the
command-line page is ``kernbench --help`` itself. Figures a benchmark measured are read
from the files it wrote (``docs/measured/*.json``) wherever a page says
``<!-- measured: NAME -->``.

A warning here fails ``mkdocs build --strict`` (CI runs it: tests/test_docs.py).
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import yaml
from mkdocs.structure.files import File, Files

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
log = logging.getLogger("mkdocs.hooks.reference")

MEASURED = re.compile(r"<!-- measured: ([\w-]+) -->")


def on_files(files: Files, config: Any) -> Files:
    from kernbench.config.store import register_configs

    register_configs()
    pages = {
        "reference/keys.md": keys_page,
        "reference/groups.md": groups_page,
        "reference/presets.md": presets_page,
        "reference/columns.md": columns_page,
        "reference/cli.md": cli_page,
    }
    for path, make in pages.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return MEASURED.sub(lambda m: measured_block(m.group(1), page.file.src_uri), markdown)


# --- keys ----------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ") or "-"


def _code(text: str) -> str:
    return f"`{text}`" if text and text != "-" else "-"


def keys_page() -> str:
    from kernbench.cli.help import composed_defaults, key_rows, workload_defaults
    from kernbench.cli.keys import own_keys, setting_keys
    from kernbench.cli.precheck import group_options, schema_of_option

    defaults = composed_defaults()
    rows = key_rows(defaults, width=60)
    out = [
        "# Config keys",
        "",
        "Every key `kernbench` takes as `key=value`, generated from the schema",
        "(`kernbench/config/schema.py`: each field's meaning, type and default), the",
        "validation rules (the limit) and `conf/` (the default as `kernbench` composes it",
        "with no overrides). `kernbench --keys` prints the same table. Units are in the",
        "names: `_ns` nanoseconds, `_gbs` GB/s (= bytes/ns), `_bytes` bytes, `_cycles`",
        "cycles, `_ghz` GHz. Which group option sets what: [Groups](groups.md).",
        "",
    ]
    sections: dict[str, list[str]] = {}
    for key, default, limit in rows:
        if key.name.startswith("workload."):
            continue
        head = key.name.split(".")[0]
        if head in ("cache", "objective"):
            head = "run"
        sections.setdefault(head, []).append(_key_line(key, default, limit))
    titles = {
        "topology": "Topology (`topology=`)",
        "address": "Address model (`address=`)",
        "sim": "Simulation",
        "paths": "Output locations (`paths=`)",
        "run": "The run",
    }
    for head, lines in sections.items():
        out += [f"## {titles.get(head, head)}", "", *_TABLE_HEAD, *lines, ""]
    for option in group_options()["workload"]:
        own = own_keys(schema_of_option(option) or "")
        if not own:
            continue
        values = workload_defaults(option)
        out += [f"## Workload `{option}` (`workload={option}`)", "", *_TABLE_HEAD]
        # this workload's meaning and default; the limit without the owners (the title's)
        out += [_key_line(key, values.get(name, ""), key.limit) for name, key in own.items()]
        out.append("")
    out += [
        "## Sweeper, launcher and environment",
        "",
        "Not config keys: the sweeper's and the launcher's own, set on a `-m` command line",
        "(`hydra.sweeper.point_timeout_s=600`; `n_trials` with `hydra/sweeper=optuna`), and",
        "an environment variable. Generated from `kernbench/sweep/settings.py` (each field's",
        "meaning, default and limit), the Optuna plugin's defaults and `kernbench/cli/keys.py`;",
        "`kernbench --keys` prints them after the config keys.",
        "",
        *_TABLE_HEAD,
        *(_key_line(key, default, key.limit) for key, default in setting_keys()),
        "",
    ]
    return "\n".join(out)


_TABLE_HEAD = ["| key | meaning | type | unit | default | limit |", "|---|---|---|---|---|---|"]


def _key_line(key: Any, default: str, limit: str) -> str:
    return (
        f"| `{key.name}` | {_cell(key.meaning)} | {_cell(key.type)} | {_cell(key.unit)}"
        f" | {_code(_cell(default))} | {_cell(limit)} |"
    )


# --- groups and presets --------------------------------------------------------------


def _comment_of(path: Path, markdown: bool = False) -> str:
    """A config file's leading comment (its ``# @package`` line left out), as one line
    of text, or as Markdown keeping its paragraphs and ``-`` lists."""
    texts = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if not text.startswith("@package"):
            texts.append(text)
    if not markdown:
        return " ".join(" ".join(texts).split())
    out: list[str] = []
    for text in texts:
        if not text:
            out.append("")
        elif text.startswith("- ") or not out or not out[-1]:
            if text.startswith("- ") and out and out[-1] and not out[-1].startswith("- "):
                out.append("")  # a list starts a block of its own
            out.append(text)
        else:
            out[-1] += " " + text  # a wrapped line of the item or paragraph before
    return "\n".join(out).strip().replace("*", "\\*")  # N*g is not emphasis


def groups_page() -> str:
    from kernbench.cli.help import group_defaults
    from kernbench.cli.precheck import group_options
    from kernbench.config.store import EXPERIMENT_GROUP, conf_dir, package_of

    defaults = group_defaults()
    out = [
        "# Config groups",
        "",
        "Pick one option of a group with `group=option` (`kernbench --help` lists them).",
        "Each option is a file in `conf/<group>/`; what it says about itself is quoted",
        "here from its first comment lines, and *lands at* is the node it sets (its",
        "`# @package`). Study presets are [their own page](presets.md).",
        "",
    ]
    for group, options in group_options().items():
        if group == EXPERIMENT_GROUP:
            continue
        out += [f"## `{group}`", "", "| option | lands at | what it is |", "|---|---|---|"]
        for option in options:
            path = conf_dir() / group / f"{option}.yaml"
            mark = " (default)" if defaults.get(group) == option else ""
            where = (package_of(path) or group) if path.is_file() else group
            about = _comment_of(path) if path.is_file() else ""
            out.append(f"| `{group}={option}`{mark} | `{where}` | {_cell(about)} |")
        out.append("")
    return "\n".join(out)


def presets_page() -> str:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from kernbench.config.store import experiment_files

    parser = OverridesParser.create()
    out = [
        "# Study presets",
        "",
        "`+experiment=<name>` adds a preset from `experiments/`: what it fixes and, for",
        "`-m`, its grid (`hydra.sweeper.params`). Generated from the files; each one's",
        "comment is quoted as it stands. Change an axis on the command line with",
        "`hydra.sweeper.params.<key>=<values>` ([a sweep of your own](../how-to/sweep.md)).",
        "",
    ]
    for path in experiment_files():
        node = yaml.safe_load(path.read_text()) or {}
        params = ((node.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
        sweeper = next(
            (
                d["override hydra/sweeper"]
                for d in node.get("defaults", [])
                if isinstance(d, dict) and "override hydra/sweeper" in d
            ),
            None,
        )
        out += [f"## `{path.stem}`", "", f"`kernbench -m +experiment={path.stem}`", ""]
        out += [_comment_of(path, markdown=True), ""]
        counts = []
        if params:
            out += ["| grid key | values |", "|---|---|"]
            for key, values in params.items():
                out.append(f"| `{key}` | `{_cell(str(values))}` |")
                override = parser.parse_override(f"{key}={values}")
                counts.append(
                    len(list(override.sweep_string_iterator()))
                    if override.is_sweep_override()
                    else 1
                )
            out.append("")
        if sweeper:
            out.append(f"Sweeper: `hydra/sweeper={sweeper}` (the grid is its search space).")
        elif counts:
            out.append(f"Points: {math.prod(counts):,} ({' x '.join(map(str, counts))}).")
        out.append("")
    return "\n".join(out)


# --- columns -------------------------------------------------------------------------


def columns_page() -> str:
    from kernbench.config.columns import (
        KERNEL_COLUMNS,
        METRICS,
        SPEED_TIMINGS,
        TIMINGS,
        group_names,
    )
    from kernbench.results.identity import IDENTITY_COLUMNS
    from kernbench.results.table import FIXED_TYPES
    from kernbench.units import unit_of

    meanings: dict[str, str] = yaml.safe_load((HERE / "columns.yaml").read_text())
    used: set[str] = set()

    def table(columns: dict[str, str]) -> list[str]:
        lines = ["| column | kind | unit | meaning |", "|---|---|---|---|"]
        for name, kind in columns.items():
            used.add(name)
            meaning = meanings.get(name)
            if meaning is None:
                log.warning("columns.yaml: column %s (kernbench) has no meaning", name)
            unit = unit_of(name) or "-"
            lines.append(f"| `{name}` | {kind} | {_cell(unit)} | {_cell(meaning or '')} |")
        return lines + [""]

    identity = {c: "text" for c in group_names()}  # a row's first columns
    identity |= {c: "text" for c in IDENTITY_COLUMNS}
    identity |= {c: "number" if str(t).startswith(("int", "double")) else "text"
                 for c, t in FIXED_TYPES.items() if c not in TIMINGS}  # fmt: skip
    identity["job_num"] = "number"
    identity["cached"] = "true/false"
    out = [
        "# Result columns",
        "",
        "A row of `result.parquet` (a run) or `results.parquet` (a sweep) holds every",
        "resolved config value under its dotted key ([Config keys](keys.md); `paths.*`",
        "left out), the columns below that every row has, and its workload's metrics.",
        "Generated from `kernbench/config/columns.py` and `kernbench/results/`; units",
        "come from the names (`kernbench/units.py`). `sim_wall_s`, `wall_s` and `cached`",
        "are the only columns that change between identical runs.",
        "",
        "## Every row",
        "",
        *table(identity | TIMINGS),
        "## With `sim.measure_speed=true`",
        "",
        *table(SPEED_TIMINGS),
    ]
    for schema, columns in METRICS.items():
        name = schema.__dataclass_fields__["name"].default
        title = "GQA (`gqa_opt2`, `gqa_opt3`)" if name.startswith("gqa_opt") else f"`{name}`"
        out += [f"## Workload {title}", "", *table(columns)]
    for schema, columns in KERNEL_COLUMNS.items():
        name = schema.__dataclass_fields__["name"].default
        out += [
            f"## `kernels.parquet` of `{name}`",
            "",
            "One row per kernel launch, after the point's `sweep_id`, `job_num` and",
            "`config_hash`.",
            "",
            *table(columns),
        ]
    for stale in sorted(set(meanings) - used):
        log.warning("columns.yaml: %s is not a column kernbench makes", stale)
    return "\n".join(out)


# --- the command line ----------------------------------------------------------------


def cli_page() -> str:
    from kernbench.cli.help import help_text

    return "\n".join(
        [
            "# `kernbench --help`",
            "",
            "What `kernbench --help` prints (made at build time by the same code). Each",
            "key's meaning is on the line under it; [Config keys](keys.md) has the same",
            "as tables, per workload.",
            "",
            "```text",
            help_text(),
            "```",
            "",
        ]
    )


# --- measured figures ----------------------------------------------------------------


def measured_block(name: str, where: str) -> str:
    """What a benchmark wrote to ``docs/measured/<name>.json``: its figures, and the
    command, machine, build and commit that produced them."""
    path = DOCS / "measured" / f"{name}.json"
    if not path.is_file():
        log.warning("%s: no measured figures %s (run the benchmark that writes it)", where, path)
        return f"*(no measurement {name} yet)*"
    data = json.loads(path.read_text())
    lines = [f"Measured by `{data['command']}` on {data['date']}:", ""]
    lines += [f"- {label}: **{value}**" for label, value in data["figures"].items()]
    lines += [
        "",
        f"(machine: {data['machine']}; build: {data['build']}; commit {data['commit']};"
        f" written by `{data['writer']}`, not by hand.)",
    ]
    return "\n".join(lines)
