"""The documentation builds, and every command it shows runs.

- ``mkdocs build --strict`` (the site in ``docs/``, ``mkdocs.yml``): every link and
  anchor resolves, the generated reference pages build (docs/hooks/reference.py holds
  the column meanings to the columns the code makes), and every figure a page takes
  from a benchmark's file is there.
- Every shell command in a ```` ```bash ```` block of README.md and docs/ runs and exits
  0, as a user types it (the ``kernbench`` console script, in a fresh directory per
  block, the block's commands in order), at a small size. To keep the whole file well
  under a minute, each ``kernbench`` command is made small the same way:

  - a sweep (``-m``) keeps the first value of each comma list it names, and of each
    axis of its preset's grid (``hydra.sweeper.params``) it does not name: one point;
  - an Optuna sweep runs ``hydra.sweeper.n_trials=2``;
  - ``hydra/launcher=submitit_slurm`` runs as ``submitit_local`` (the same launcher
    code on this machine), without the SLURM-only keys;
  - a block marked ``<!-- docs-test: key=value ... -->`` (invisible on the page) gets
    those overrides too (the decoder layer at a small shape); one marked
    ``<!-- docs-test: --cfg job -->`` is composed and validated, not run (the decoder
    layer at Llama-3-8B's full size, about 100 s).

  A shown transcript (a text block's ``$ kernbench ...`` line and the line under it)
  must be what ``kernbench`` prints, exit 1 (the errors page).

  Not run here, and why: the set-up commands (``python3 -m venv``, ``pip install``: CI's
  own install is one, and :func:`test_the_setup_commands_name_real_extras` checks what
  they name), ``pytest`` (this suite), ``ray start`` and the ``hydra/launcher=ray``
  command (tests/test_ray.py runs that command, read from docs/how-to/cluster.md,
  against a cluster it starts).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?:<!-- docs-test: (?P<marker>.*?) -->\n)?```bash\n(?P<body>.*?)```", re.S)
SETUP = ("python3", ".", "pip", "source")
NOT_HERE = {"pytest": "this suite", "ray": "tests/test_ray.py starts its own cluster"}
SLURM_ONLY = ("partition", "account", "qos", "additional_parameters")
TRITON = ("workload=triton", "workload=decoder_layer", "+experiment=decoder")


@dataclass(frozen=True)
class Block:
    """One ```bash block: where it is, its commands (each a list of argv), its marker."""

    where: str
    commands: tuple[tuple[str, ...], ...]
    marker: tuple[str, ...]


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body"))
            body = match.group("body").replace("\\\n", " ")
            commands = []
            for text_line in body.splitlines():
                words = shlex.split(text_line, comments=True)
                while words:  # a && b: both, in order
                    cut = words.index("&&") if "&&" in words else len(words)
                    commands.append(tuple(words[:cut]))
                    words = words[cut + 1 :]
            marker = tuple((match.group("marker") or "").split())
            found.append(Block(f"{page.relative_to(ROOT)}:{line}", tuple(commands), marker))
    return found


def preset_grid(name: str) -> dict[str, str]:
    node = yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())
    return dict(((node.get("hydra") or {}).get("sweeper") or {}).get("params") or {})


def first_value(key: str, values: str) -> str:
    """The first value of a sweep (``a,b``, ``range(0,4)``, ``choice(...)``), as Hydra
    enumerates it."""
    override = OverridesParser.create().parse_override(f"{key}={values}")
    if not override.is_discrete_sweep():
        return values  # one value, or a search space (interval)
    return next(iter(override.sweep_string_iterator()))


def small(argv: tuple[str, ...], marker: tuple[str, ...]) -> list[str] | None:
    """``argv`` at the small size the module docstring says; None: not run here."""
    if argv[0] != "kernbench":
        return list(argv)
    if "hydra/launcher=ray" in argv:
        return None
    out = ["kernbench"]
    named: set[str] = set()
    optuna = "hydra/sweeper=optuna" in argv
    sweep = "-m" in argv and not optuna  # an Optuna sweep's size is its n_trials
    for word in argv[1:]:
        key, _, value = word.partition("=")
        if key.startswith("hydra.launcher.") and key.endswith(SLURM_ONLY):
            continue
        if key.lstrip("+").startswith("hydra.launcher.additional_parameters"):
            continue
        if word == "hydra/launcher=submitit_slurm":
            word = "hydra/launcher=submitit_local"
        elif sweep and value and "," in value and not value.startswith(("[", "{")):
            word = f"{key}={first_value(key, value)}"
        named.add(key.removeprefix("hydra.sweeper.params."))
        out.append(word)
    presets = [w.split("=", 1)[1] for w in argv if w.startswith("+experiment=")]
    if sweep and presets:
        for key, values in preset_grid(presets[0]).items():
            if key not in named:
                out.append(f"hydra.sweeper.params.{key}={first_value(key, str(values))}")
    if optuna:
        out = [w for w in out if not w.startswith("hydra.sweeper.n_trials=")]
        out.append("hydra.sweeper.n_trials=2")
    return out + list(marker)


def runnable() -> list[tuple[str, list[list[str]]]]:
    """The commands as they run here, in chains: a ``kernbench`` command and the
    ``kernbench-report`` right after it (which reports on its output), each chain in a
    directory of its own. A chain another block runs already is left out (the README
    shows some of the pages' examples)."""
    seen: set[str] = set()
    found = []
    for block in blocks():
        commands = [small(c, block.marker) for c in block.commands]
        commands = [c for c in commands if c and c[0] not in SETUP and c[0] not in NOT_HERE]
        chains: list[list[list[str]]] = []
        for argv in commands:
            if argv[0] == "kernbench-report" and chains:
                chains[-1].append(argv)
            else:
                chains.append([argv])
        for n, chain in enumerate(chains):
            if repr(chain) not in seen:
                seen.add(repr(chain))
                found.append((f"{block.where}#{n}", chain))
    return found


RUNS = runnable()


@pytest.mark.parametrize(("where", "commands"), RUNS, ids=[w for w, _ in RUNS])
def test_every_documented_command_runs(where, commands, tmp_path):
    if any(t in " ".join(c) for c in commands for t in TRITON) and not importlib.util.find_spec(
        "triton"
    ):
        pytest.skip("needs the triton extra")
    if any("hydra/sweeper=optuna" in c for c in commands) and not importlib.util.find_spec(
        "hydra_plugins.hydra_optuna_sweeper"
    ):
        pytest.skip("needs the optuna extra")
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    for argv in commands:
        proc = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, f"{where}: {shlex.join(argv)}\n{proc.stderr[-3000:]}"


def transcripts() -> list[tuple[str, list[str], str]]:
    """The ``$ kernbench ...`` lines of the pages' text blocks, each with the line shown
    under it (what the command prints on stderr)."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines[:-1]):
            if line.startswith("$ kernbench "):
                where = f"{page.relative_to(ROOT)}:{n + 1}"
                found.append((where, shlex.split(line[2:]), lines[n + 1]))
    return found


@pytest.mark.parametrize(
    ("where", "argv", "shown"), transcripts(), ids=[w for w, *_ in transcripts()]
)
def test_every_documented_error_is_what_kernbench_says(where, argv, shown, tmp_path):
    """A shown mistake exits 1 with exactly the line the page shows."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / argv[0]), *argv[1:]],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [shown]), where


def test_the_small_size_rewrites():
    """What the runs above change, on the forms the docs use."""
    grid = preset_grid("bw_equivalence")
    line = small(("kernbench", "-m", "+experiment=bw_equivalence", "cache=false"), ())
    assert line[:4] == ["kernbench", "-m", "+experiment=bw_equivalence", "cache=false"]
    assert line[4:] == [f"hydra.sweeper.params.{k}={str(v).split(',')[0]}" for k, v in grid.items()]
    named = small(
        ("kernbench", "-m", "+experiment=bw_equivalence",
         "hydra.sweeper.params.workload.access_bytes=4352,65536"), ()
    )  # fmt: skip
    assert "hydra.sweeper.params.workload.access_bytes=4352" in named
    assert sum(w.startswith("hydra.sweeper.params.workload.access_bytes") for w in named) == 1
    assert small(("kernbench", "-m", "workload.outstanding=range(1,4)", "a=1,2"), ()) == [
        "kernbench", "-m", "workload.outstanding=1", "a=1"
    ]  # fmt: skip
    slurm = small(
        ("kernbench", "-m", "hydra/launcher=submitit_slurm", "hydra.launcher.partition=x",
         "hydra.launcher.timeout_min=30"), ()
    )  # fmt: skip
    assert slurm == [
        "kernbench",
        "-m",
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=30",
    ]
    assert small(("kernbench", "-m", "hydra/launcher=ray"), ()) is None
    assert small(("kernbench", "workload=decoder_layer"), ("workload.hidden=256",)) == [
        "kernbench", "workload=decoder_layer", "workload.hidden=256"
    ]  # fmt: skip


def test_the_setup_commands_name_real_extras():
    """Every ``pip install -e '.[...]'`` the docs show names extras pyproject.toml has,
    and the README's test command installs what CI installs (.ci/run) and runs pytest."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ])  # fmt: skip
    named = []
    for block in blocks():
        for argv in block.commands:
            if argv[:2] == ("pip", "install"):
                spec = next(w for w in argv if w.startswith("."))
                named.append(
                    set(re.findall(r"\[(.*)\]", spec)[0].split(",")) if "[" in spec else set()
                )
    assert named and all(n <= extras for n in named), (named, extras)
    ci = re.search(r"pip install .* -e '\.\[(.*?)\]'", (ROOT / ".ci/run").read_text())
    readme = [b for b in blocks() if b.where.startswith("README.md")]
    tests = [b.commands for b in readme if ("pytest",) in b.commands]
    assert len(tests) == 1, "the README shows one test command"
    install = next(c for c in tests[0] if c[:2] == ("pip", "install"))
    assert install[-1] == f".[{ci.group(1)}]"
    assert "docs" in ci.group(1).split(",")


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    pytest.importorskip("material", reason="the docs extra is not installed")
    env = {k: v for k, v in os.environ.items()} | {"NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-5000:]
    keys = (tmp_path / "reference" / "keys" / "index.html").read_text()
    assert "workload.access_bytes" in keys and "bytes one DMA access moves" in keys
