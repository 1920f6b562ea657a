"""The command line for people (issue 14 items 3, 4, 8): typo help, the key list,
``--cfg job`` with validation, and the warning before a very long run."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from kernbench.cli.estimate import SECONDS_PER_ACCESS, WARN_FROM, warning, work
from kernbench.cli.help import (
    MEANING_INDENT,
    SETTINGS_HEADING,
    _option_node,
    help_text,
    key_lines,
    key_table,
    primary_config,
)
from kernbench.cli.keys import schema_keys
from kernbench.cli.precheck import UsageError, check_overrides
from kernbench.cli.show_config import job_config_yaml
from kernbench.config.flatten import flatten
from kernbench.config.schema import AddressModel, FabricModel
from kernbench.config.store import WORKLOAD_SCHEMAS, AppConfig, conf_dir, register_configs
from kernbench.errors import ConfigError
from kernbench.units import unit_of
from tests.support import make_cfg
from tests.test_estimate_memory import big

register_configs()

# (override, the one error line)
USAGE_CASES = [
    (
        "workload.acess_bytes=4096",
        "workload.acess_bytes: no such key; did you mean workload.access_bytes?"
        " (kernbench --help lists every key)",
    ),
    (
        "tolopogy.pes_per_cube=2",
        "tolopogy.pes_per_cube: no such key; did you mean topology.pes_per_cube?"
        " (kernbench --help lists every key)",
    ),
    (
        "workload=base_stream",
        "workload=base_stream: no such option; workload options: decoder_layer, gqa_opt2,"
        " gqa_opt3, gqa_pair, stream, triton",
    ),
    (
        "workload=gqa_op3",
        "workload=gqa_op3: no such option; workload options: decoder_layer, gqa_opt2,"
        " gqa_opt3, gqa_pair, stream, triton; did you mean gqa_opt3?",
    ),
    (
        "experiment=bw_equivalence",
        "experiment=bw_equivalence: a study preset is added, not chosen: write"
        " +experiment=<name> (presets: bw_equivalence, bw_equivalence_models, decoder_8b,"
        " decoder_layer, design_search, dispatch_ratio, sim_speed)",
    ),
    (  # issue 22: the start of a key's last part, from another parent
        "topology.fixed=0",
        "topology.fixed: no such key;"
        " did you mean topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles?"
        " (kernbench --help lists every key)",
    ),
    ("address.model=xx", "address.model=xx: not one of pa, va, la"),
    ("topology.links.pe_noc_bw_gbs=fast", "topology.links.pe_noc_bw_gbs=fast: not a number"),
    ("sim.trace=maybe", "sim.trace=maybe: not true or false"),
    ("workload.access_bytes=1,2,x", "workload.access_bytes=x: not an integer"),
]


@pytest.mark.parametrize(("override", "line"), USAGE_CASES)
def test_override_that_cannot_be_right_is_one_line(override, line):
    with pytest.raises(UsageError) as info:
        check_overrides([override])
    assert str(info.value) == line


# Found by tests/test_override_fuzz.py: each was Hydra's report (several lines, or a
# line not naming the override) through `kernbench`; now one line naming it, exit 1.
FUZZ_FOUND = [
    (  # a lexer error: Hydra's message does not say which override it is in
        ["topology=small", "address.model==)"],
        "kernbench: error: address.model==): mismatched input '='",
    ),
    (  # null on a key that cannot be unset: "Error merging override", 3 lines
        ["address.model=null"],
        "kernbench: error: address.model=null: not one of pa, va, la (it cannot be unset)",
    ),
    (
        ["topology.n_sips=null"],
        "kernbench: error: topology.n_sips=null: not an integer (it cannot be unset)",
    ),
    (  # a sweep without -m: Hydra's "Ambiguous value", 5 lines
        ["workload.seed=1,2"],
        "kernbench: error: workload.seed=1,2: a sweep of values needs -m (--multirun)",
    ),
    # Issue 22: a list written with spaces (the shell splits it): Hydra's
    # LexerNoViableAltException; now the list as it should be written.
    (
        ["-m", "topology.pes_per_cube=4", "8"],
        "kernbench: error: 8: not an override (a list written with spaces?);"
        " write a list with commas: topology.pes_per_cube=4,8",
    ),
    (
        ["-m", "workload.access_bytes=512,", "4096"],
        "kernbench: error: 4096: not an override (a list written with spaces?);"
        " write a list with commas: workload.access_bytes=512,4096",
    ),
    (["-m", "8"], "kernbench: error: 8: not an override: write key=value"),
    # Issue 38: the suggestion keeps every value the shell split off, not the first.
    (
        ["-m", "workload.outstanding=1", "2", "4"],
        "kernbench: error: 2: not an override (a list written with spaces?);"
        " write a list with commas: workload.outstanding=1,2,4",
    ),
    (
        ["-m", "workload.outstanding=1,", "2,", "4", "topology=small"],
        "kernbench: error: 2,: not an override (a list written with spaces?);"
        " write a list with commas: workload.outstanding=1,2,4",
    ),
    # Issue 38: what to type instead of a value meant as one.
    (
        ["-m", "workload.outstanding=[4096,65536]"],
        "kernbench: error: workload.outstanding=[4096, 65536]: not an integer; [...] is one"
        " value, a list: to sweep over them write workload.outstanding=4096,65536 (with -m)",
    ),
    (
        ["workload.access_bytes=64KiB"],
        "kernbench: error: workload.access_bytes=64KiB: not an integer; sizes are in bytes,"
        " with no unit: write 65536",
    ),
    (
        ["workload.bytes_per_pe=2MB"],
        "kernbench: error: workload.bytes_per_pe=2MB: not an integer; sizes are in bytes,"
        " with no unit: write 2000000",
    ),
    (
        ["workload.access_bytes=1e3"],
        "kernbench: error: workload.access_bytes=1000.0: not an integer (Hydra reads it as"
        " the number 1000.0): write 1000",
    ),
    (  # a size key's unit hint is for sizes only
        ["topology.pes_per_cube=4k"],
        "kernbench: error: topology.pes_per_cube=4k: not an integer",
    ),
]


@pytest.mark.parametrize(("argv", "line"), FUZZ_FOUND, ids=lambda v: str(v))
def test_fuzz_found_overrides_are_one_line_before_hydra(capsys, argv, line):
    from kernbench.cli.entry import before_hydra

    with pytest.raises(SystemExit) as info:
        before_hydra(argv)
    assert info.value.code == 1
    [got] = capsys.readouterr().err.splitlines()
    assert got.startswith(line), got


def test_null_is_allowed_where_the_schema_is_optional_and_sweeps_with_m():
    check_overrides(["topology.cube.memory_map.hbm_channels_per_pe=null"], multirun=False)
    check_overrides(["workload.seed=1,2"], multirun=True)
    check_overrides(["topology.name='a,b'"], multirun=False)  # quoted: one value (text)


def test_workload_key_is_checked_against_the_chosen_workload():
    with pytest.raises(UsageError, match=r"^workload.access_bytes: not a key of workload gqa_opt3"):
        check_overrides(["workload=gqa_opt3", "workload.access_bytes=4096"])
    check_overrides(["workload=gqa_opt3", "workload.seq_tokens=4096"])
    check_overrides(["+experiment=dispatch_ratio", "workload.seq_tokens=4096"])  # preset picks


def test_a_traffic_case_fits_the_stream_only():
    """``traffic=`` sets stream keys (pattern, active PEs): with a GQA workload it is one
    line naming the key it sets, before Hydra's four-line composition error."""
    with pytest.raises(UsageError) as info:
        check_overrides(["workload=gqa_opt2", "traffic=hotspot"])
    assert str(info.value).startswith(
        "traffic=hotspot sets workload.pattern: not a key of workload gqa_opt2"
    )
    check_overrides(["traffic=hotspot,local"])
    check_overrides(["workload=stream", "traffic=uniform"])


GOOD = [
    ["workload.access_bytes=1024,4096", "channel_mapping=one_to_one,n_to_one"],
    ["+experiment=bw_equivalence", "hydra/launcher=basic", "hydra.sweep.dir=x"],
    ["workload.active_pes=1", "workload.active_pes=all", "cache=false", "sim.trace=true"],
    ["topology.cube.memory_map.hbm_channels_per_pe=8", "+hydra.job.env_set.X=1", "~sim.oplog"],
]


@pytest.mark.parametrize("overrides", GOOD)
def test_valid_overrides_pass(overrides):
    check_overrides(overrides)


def test_app_typo_is_one_line_and_no_run(run_app):
    run = run_app("workload.acess_bytes=4096")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "kernbench: error: workload.acess_bytes: no such key; did you mean workload.access_bytes?"
        " (kernbench --help lists every key)"
    ]
    assert run.rows() == []


def test_a_preset_without_m_says_it_runs_one_point_and_how_to_sweep(run_app):
    """Issue 56: ``+experiment=X`` without -m ran one point, exit 0, and said nothing."""
    run = run_app("+experiment=bw_equivalence", "topology=small", "workload.bytes_per_pe=65536")
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[0] == (
        "kernbench: note: +experiment=bw_equivalence is a sweep preset; without -m this runs"
        " one point (the preset's defaults, not its grid): kernbench -m"
        " +experiment=bw_equivalence sweeps it"
    )
    assert len(run.rows()) == 1


def _all_schema_leaves(schema: type, prefix: str) -> set[str]:
    names = set()
    for f in dataclasses.fields(schema):
        value = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(value):
            names |= _all_schema_leaves(type(value), f"{prefix}{f.name}.")
        elif prefix or f.name != "workload":
            names.add(f"{prefix}{f.name}")
    return names


def test_help_lists_every_schema_key_with_type_unit_default_limit():
    expected = _all_schema_leaves(AppConfig, "")
    for schema in WORKLOAD_SCHEMAS.values():
        expected |= _all_schema_leaves(schema, "workload.")
    assert set(schema_keys()) == expected
    table = key_table()
    lines = {line.split()[0]: line for line in key_lines(table)[1:]}
    assert set(lines) == expected
    words = lines["workload.access_bytes"].split()
    assert words[:4] == ["workload.access_bytes", "int", "B", "65536"]
    assert ">= 1" in lines["workload.access_bytes"]
    assert lines["topology.cube.memory_map.hbm_channel_bw_gbs"].split()[1:4] == [
        "float",
        "GB/s",
        "32.0",
    ]
    assert "a power of two" in lines["topology.pe_mmu.page_size"]
    assert "<= 64" in lines["topology.pes_per_cube"]
    assert "[gqa_opt2, gqa_opt3, gqa_pair]" in lines["workload.seq_tokens"]
    assert lines["workload.seq_tokens"].split()[3] == "2048"


def test_every_key_says_what_it_means_under_its_line():
    """Each key's meaning comes from its schema field and is printed under its line; a
    workload key whose workloads mean different things by it names each workload."""
    keys = schema_keys()
    assert [name for name, k in keys.items() if not k.meaning] == []
    assert keys["workload.access_bytes"].meaning.startswith("bytes one DMA access moves")
    block_n = keys["workload.block_n"].meaning
    assert "(triton)" in block_n and "(decoder_layer)" in block_n
    assert keys["workload.access_bytes"].meaning.count("(stream)") == 0  # one workload
    table = key_table()
    at = next(i for i, line in enumerate(table) if line.split()[0] == "workload.access_bytes")
    assert table[at + 1] == MEANING_INDENT + keys["workload.access_bytes"].meaning
    assert all(line.startswith("  ") for line in table)


def _composed(overrides: list[str]) -> dict:
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        cfg = compose(config_name="config", overrides=overrides)
    return flatten(OmegaConf.to_container(cfg))


def test_help_composes_the_defaults_as_hydra_does():
    """--help composes conf/ itself (Hydra's compose scans every plugin, importing the
    simulator): the same values as Hydra's, for the defaults and for every workload."""
    assert flatten(OmegaConf.to_container(primary_config())) == _composed([])
    for option in ("stream", "gqa_opt2", "gqa_opt3", "triton", "decoder_layer"):
        ours = flatten({"workload": OmegaConf.to_container(_option_node("workload", option))})
        theirs = _composed([f"workload={option}"])
        assert ours == {k: v for k, v in theirs.items() if k.startswith("workload.")}
    small = _option_node("topology", "small")  # a defaults list within a group
    assert (small.name, small.pes_per_cube, small.links.pcie_bw_gbs) == ("small", 2, 32.0)


def test_help_hides_base_configs_and_shows_plus_experiment():
    text = help_text()
    assert "base_stream" not in text and "base_gqa" not in text
    assert "  workload=decoder_layer | gqa_opt2 | gqa_opt3 | gqa_pair | stream*" in text
    assert (
        "  +experiment=bw_equivalence | bw_equivalence_models | decoder_8b | decoder_layer"
        " | design_search | dispatch_ratio | sim_speed" in text
    )
    assert "\n  experiment=" not in text


def test_units_come_from_the_names():
    assert [unit_of(k) for k in ("workload.access_bytes", "topology.links.pcie_latency_ns",
            "mean_pe_bw_gbs", "dispatch_cycles_per_tile", "topology.pe_mmu.page_size",
            "topology.pes_per_cube")] == ["B", "ns", "GB/s", "cycles/tile", "B", ""]  # fmt: skip


def test_cfg_job_validates_and_shows_derived_values():
    text = job_config_yaml(["topology=small"])
    assert "hbm_channels_per_pe: 8" in text  # 16 pseudo-channels / 2 PEs per cube
    assert "null" not in text.split("paths:")[0]
    with pytest.raises(ConfigError, match="64 is not divisible by topology.pes_per_cube = 7"):
        job_config_yaml(["topology.pes_per_cube=7"])


def test_cfg_job_through_the_app(run_app):
    run = run_app("--cfg", "job", "topology.pes_per_cube=7")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "kernbench: error: topology.cube.memory_map.hbm_pseudo_channels: 64 is not divisible"
        " by topology.pes_per_cube = 7"
    ]
    run = run_app("--cfg", "job", "topology.pes_per_cube=4")
    assert run.returncode == 0 and "hbm_channels_per_pe: 16" in run.stdout
    assert run.rows() == []  # shown, not run


def test_long_run_warning_states_count_and_time():
    """access_bytes=1 over 4 MiB per PE on all 16 PEs: 4,194,304 x 16 = 67,108,864
    accesses; at 4.9 us each (n:1) 328.8 s, about 5 min."""
    cfg = make_cfg(access_bytes=1)
    line = warning(cfg)
    count = 4 * 1024 * 1024 * 16
    assert count * SECONDS_PER_ACCESS["n_to_one"] == pytest.approx(328.8, abs=0.1)
    assert line == (
        f"kernbench: warning: {count:,} DMA accesses to simulate, about 5 min of wall time"
        " at ~4.9 us each (Ctrl-C stops it)"
    )


def test_no_warning_below_the_threshold():
    # 4 MiB / 64 B x 16 PEs = 1,048,576 accesses: well under 10^7
    assert warning(make_cfg(access_bytes=64)) is None
    # copy doubles the accesses: 4 MiB / 8 B x 2 x 16 = 16,777,216 >= 10^7
    assert WARN_FROM <= 4 * 1024 * 1024 // 8 * 2 * 16
    assert "16,777,216 DMA accesses" in warning(make_cfg(access_bytes=8, op="copy"))


def test_a_long_uniform_stream_under_fair_is_warned_of():
    """1,024 PEs x 64 accesses = 65,536 accesses, far under 10^7, but each costs the
    flat 13.4 us (1:1) plus 0.04 us x 1,024^1.5 = 1,310.72 us (the fair solver fills
    the whole system) plus 0.1 us x 1 recomputation x 4,096 queues in flight (4 per
    PE, one channel each) x 256 / 16,384 (an access that short is mostly in latency)
    = 6.4 us: 1,330.52 us, 87.2 s in all (measured: 71.5-131 s; 80.9 s with
    components kept). Under
    ``reservation`` the flat cost alone, 0.9 s: no warning. 4,096 PEs x 4 accesses:
    a PE's first accesses cost an eighth of the system's term (4 of 32), 21.8 s: no
    warning."""
    fair = big("uniform", 4, 4, access_bytes=256, bytes_per_pe=64 * 256)
    assert warning(fair) == (
        "kernbench: warning: 65,536 DMA accesses to simulate, about 87 s of wall time"
        " at ~1330.5 us each (Ctrl-C stops it)"
    )
    reservation = dataclasses.replace(fair.sim, fabric=FabricModel.reservation)
    assert warning(dataclasses.replace(fair, sim=reservation)) is None
    assert warning(big("uniform", 4, 16, access_bytes=256, bytes_per_pe=4 * 256)) is None


def test_a_uniform_stream_of_large_1_1_accesses_under_fair_is_warned_of():
    """256 PEs (4 cubes of 64) x 64 accesses of 64 KiB (the default stream), 1:1 over
    8 channels, VA: 16,384 accesses, each up to 8 recomputations (one per channel
    descriptor: VA's 16 pages per channel are one descriptor, issue 54) covering the
    256 x 4 x 8 = 8,192 queues in flight: 0.1 us x 8 x 8,192 = 6,553.6 us, plus 13.4
    flat and 0.04 x 256^1.5 = 163.84: 6,730.84 us each, 110 s (measured 81-91 s). PA
    and LA are the same (before, VA's 16 x 8 = 128 requests each counted a
    recomputation: 16x the term). 64 PEs (one cube) x 64 accesses: 13.4 + 20.48 + 0.1
    x 8 x 2,048 = 1,672.28 us, 6.8 s, no warning under any model (measured 1.6-2.0 ms;
    VA 28.4 ms before). 4 KiB accesses over 4 MiB per PE on 64 PEs are 1,024 each, 8
    descriptors covering a quarter of their term (4,096 / 16,384): 13.4 + 20.48 +
    409.6 = 443.48 us, 29 s, no warning (measured 314 us)."""
    va = big("uniform", 1, 4, access_bytes=65536, bytes_per_pe=64 * 65536)
    assert warning(va) == (
        "kernbench: warning: 16,384 DMA accesses to simulate, about 110 s of wall time"
        " at ~6730.8 us each (Ctrl-C stops it)"
    )
    for model in (AddressModel.pa, AddressModel.la):
        other = dataclasses.replace(va, address=dataclasses.replace(va.address, model=model))
        assert work(other) == work(va)
    one_cube = big("uniform", 1, 1, access_bytes=65536, bytes_per_pe=64 * 65536)
    assert warning(one_cube) is None
    assert work(one_cube)[2] == pytest.approx((13.4 + 20.48 + 0.1 * 8 * 2048) * 1e-6, rel=1e-12)
    small = big("uniform", 1, 1, access_bytes=4096, bytes_per_pe=4 << 20)
    assert warning(small) is None
    assert work(small)[2] == pytest.approx((13.4 + 20.48 + 409.6) * 1e-6, rel=1e-12)


def test_active_pes_is_text_in_every_row():
    """One type for ``workload.active_pes``: a single run's column and a sweep's agree."""
    from kernbench.config import flatten, validate

    assert flatten(validate(make_cfg(active_pes=1)))["workload.active_pes"] == "1"
    assert flatten(validate(make_cfg(active_pes="all")))["workload.active_pes"] == "all"
    with pytest.raises(ConfigError, match="x is neither 'all' nor a count in 1..16"):
        validate(make_cfg(active_pes="x"))


def test_gqa_per_tile_commands_and_bytes_are_integers():
    from kernbench.config.schema import GqaWorkloadConfig, KernBenchConfig
    from kernbench.config.validate import validate
    from kernbench.simulate import run

    cfg = validate(KernBenchConfig(workload=GqaWorkloadConfig(name="gqa_opt2", seq_tokens=256)))
    m = run(cfg).metrics
    assert (m["commands_per_tile"], m["logical_bytes_per_tile"]) == (2, 332)
    assert type(m["commands_per_tile"]) is int and type(m["logical_bytes_per_tile"]) is int


def test_app_warns_before_a_long_run_but_not_a_cached_one(
    compose_cfg, monkeypatch, tmp_path, capsys
):
    """The hook in app.run_job: the warning precedes the simulation (stubbed here, with a
    row of every declared stream metric: the point cache serves only what an ok row
    holds), and a point served from the point cache, which takes no time, gets none."""
    from kernbench import simulate
    from kernbench.config.columns import INTEGERS, METRICS, TEXT
    from kernbench.config.schema import StreamWorkloadConfig
    from kernbench.job import run_job
    from kernbench.sweep.cache import PointCache

    declared = METRICS[StreamWorkloadConfig]
    stub_value = {name: 1 if name in INTEGERS else 1.0 for name in declared}  # counts are ints
    metrics = {name: "x" if kind == TEXT else stub_value[name] for name, kind in declared.items()}

    def stub(cfg, **kw):
        return simulate.RunResult(dict(metrics))

    monkeypatch.setattr(simulate, "run_validated", stub)
    cache = PointCache(tmp_path / "cache")
    long_run = compose_cfg("workload.access_bytes=1")
    assert run_job(long_run, tmp_path / "a", cache=cache) == "ok"
    assert "kernbench: warning: 67,108,864 DMA accesses to simulate" in capsys.readouterr().err
    assert run_job(long_run, tmp_path / "b", cache=cache) == "ok"  # served from the cache
    assert "warning" not in capsys.readouterr().err
    assert run_job(compose_cfg("workload.access_bytes=64"), tmp_path / "c") == "ok"
    assert "warning" not in capsys.readouterr().err


def test_the_console_script_answers_before_the_app_as_the_app_does(run_app):
    """``kernbench`` (kernbench.cli.command) answers --help, --keys and --cfg job before
    importing kernbench.app, which registers the config schemas: the same answers (but
    the run and sweep directories, named by the time and the process)."""
    script = [str(Path(sys.executable).parent / "kernbench")]

    def answer(run: Any) -> tuple[int, list[str], str]:
        lines = [ln for ln in run.stdout.splitlines() if not ln.strip().startswith(DIRS)]
        return run.returncode, lines, run.stderr

    for args in (["--cfg", "job", "topology=small"], ["--keys"], ["experiment=x"]):
        ours, app = run_app(*args, command=script), run_app(*args)
        assert answer(ours) == answer(app), args
    shown = run_app("--cfg", "job", "topology=small", command=script).stdout
    assert "hbm_channels_per_pe: 8" in shown


DIRS = ("run_dir:", "sweep_dir:")


def test_override_syntax_error_is_hydras_message_on_one_line(run_app):
    run = run_app("topology.pes_per_cube==3")
    assert run.returncode == 1
    [line] = run.stderr.splitlines()
    assert line.startswith("kernbench: error: Error parsing override 'topology.pes_per_cube==3'")


def test_help_and_keys_through_the_app(run_app):
    keys = run_app("--keys")
    assert keys.returncode == 0
    lines = keys.stdout.splitlines()
    assert lines[0].split() == ["key", "type", "unit", "default", "limit"]
    assert {line.split()[0] for line in key_lines(lines)[1:]} == set(schema_keys())
    helped = run_app("--help")
    assert helped.returncode == 0 and "+experiment=bw_equivalence" in helped.stdout
    assert keys.rows() == [] and helped.rows() == []  # nothing ran


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("paths.root=", "paths.root: empty; give the directory outputs go to (default: outputs)"),
        (
            "paths.sweep_name=../../../X",
            "paths.sweep_name=../../../X: not a directory name under paths.root",
        ),
        ("paths.sweep_name=/tmp/X", "paths.sweep_name=/tmp/X: not a directory name under"),
        ("paths.sweep_name=a/../../X", "paths.sweep_name=a/../../X: not a directory name"),
    ],
)
def test_output_locations_stay_where_they_say(override, message):
    """An empty root wrote runs and the cache at the filesystem's root; a sweep name
    with '..' or an absolute one wrote outside the output root."""
    with pytest.raises(UsageError) as info:
        check_overrides([override])
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("override", ["paths.root=/tmp/out", "paths.sweep_name=studies/bw"])
def test_output_locations_under_the_root_are_fine(override):
    check_overrides([override])


def _presets(tmp_path):
    """A user's own preset directory, as Hydra users add one with hydra.searchpath."""
    (tmp_path / "presets" / "experiment").mkdir(parents=True)
    (tmp_path / "presets" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nworkload:\n  bytes_per_pe: 65536\n"
    )
    return f"hydra.searchpath=[file://{tmp_path / 'presets'}]"


def test_a_users_preset_on_the_search_path_is_an_option(tmp_path):
    """The precheck knew only conf/ and refused +experiment=mine ("no such option")."""
    search = _presets(tmp_path)
    check_overrides(["+experiment=mine", search])
    with pytest.raises(UsageError, match=r"experiment options: .*mine.*; did you mean mine\?"):
        check_overrides(["+experiment=mien", search])
    with pytest.raises(UsageError, match="experiment=mine: no such option"):
        check_overrides(["+experiment=mine"])  # without the search path it is not there


def test_a_run_with_a_users_preset_uses_it(run_app, tmp_path):
    run = run_app("+experiment=mine", _presets(tmp_path), "topology=small", "pe_cost_model=zero")
    assert run.returncode == 0, run.stderr
    [row] = run.rows()
    assert row["status"] == "ok" and row["workload.bytes_per_pe"] == 65536


def test_help_lists_a_users_presets_from_the_search_path(run_app, tmp_path):
    """``kernbench --help hydra.searchpath=[...]`` names the user's own options beside
    the shipped ones, marked, in their group's line; without it they are not there."""
    search = _presets(tmp_path)
    (tmp_path / "presets" / "traffic").mkdir()
    (tmp_path / "presets" / "traffic" / "myhot.yaml").write_text(
        "# @package _global_\nworkload:\n  pattern: hotspot\n"
    )
    helped = run_app("--help", search)
    assert helped.returncode == 0, helped.stderr
    lines = helped.stdout.splitlines()
    [experiment] = [line for line in lines if line.startswith("  +experiment=")]
    assert experiment.endswith("| sim_speed | mine (searchpath)")
    [traffic] = [line for line in lines if line.startswith("  traffic=")]
    assert traffic.endswith("| myhot (searchpath)")
    assert "(searchpath)" not in run_app("--help").stdout


# --- --keys: the settings that are not config keys (issue 55) ------------------------

# Each setting users give that is not a config key: (type, default, words of its limit,
# words of its meaning), as the sweeper, the launcher, Optuna and kernbench/__init__.py
# define them. A point may run a week at most: 7 x 24 x 3600 s.
WEEK_S = 7 * 24 * 3600
SETTINGS = {
    "hydra.sweeper.point_timeout_s": ("float", "null", f"<= {WEEK_S}", "seconds a point may run"),
    "hydra.sweeper.dry_run": ("bool", "False", "", "validate every point"),
    "hydra.sweeper.resume": ("bool", "False", "", "run only the other points"),
    "hydra.sweeper.direction": ("any", "null", "minimize or maximize", "Pareto front"),
    "hydra.launcher.n_jobs": ("int", "-1", "1 to 4 per core", "-1 is one per core"),
    "hydra.sweeper.n_trials": ("int", "20", "", "trials (points) the search runs"),
    "KERNBENCH_PURE": ("environment", "unset", "1, or 0 / unset", "from its .py source"),
}


def settings_of(stdout: str) -> dict[str, tuple[list[str], str]]:
    """Per key line after the settings' heading: its words, and its meaning's lines
    joined (the more indented lines under it)."""
    lines = stdout.splitlines()
    found: dict[str, tuple[list[str], str]] = {}
    name = ""
    for line in lines[lines.index(SETTINGS_HEADING) + 2 :]:
        if line.startswith(MEANING_INDENT):
            words, meaning = found[name]
            found[name] = (words, f"{meaning} {line.strip()}".strip())
        else:
            name = line.split()[0]
            found[name] = (line.split(), "")
    return found


def test_keys_lists_the_sweeper_launcher_and_environment_settings_with_meanings(run_app):
    """``kernbench --keys``: after the config keys (which stay exactly the schema's), a
    heading, then each setting users give that is no config key, with its type, default
    (n_trials: Optuna's 20), limit (point_timeout_s: a week) and what it means on the
    lines under it."""
    keys = run_app("--keys")
    assert keys.returncode == 0, keys.stderr
    assert {line.split()[0] for line in key_lines(keys.stdout.splitlines())[1:]} == set(
        schema_keys()
    )
    found = settings_of(keys.stdout)
    for name, (kind, default, limit, meaning) in SETTINGS.items():
        words, said = found[name]
        assert words[1:4] == [kind, "-", default], (name, words)
        assert limit in " ".join(words[4:]), (name, words)
        assert meaning in said, (name, said)


@pytest.mark.parametrize(("seconds", "refused"), [(WEEK_S, False), (WEEK_S + 0.5, True)])
def test_the_point_timeout_limit_keys_prints_is_the_one_the_sweeper_applies(
    run_app, seconds, refused
):
    """The sweeper takes a week (the limit ``--keys`` prints) and refuses half a second
    more, in one line naming the key: the printed limit is the applied one."""
    run = run_app("-m", "hydra.sweeper.dry_run=true", f"hydra.sweeper.point_timeout_s={seconds}",
                  "topology=small", "workload.bytes_per_pe=65536")  # fmt: skip
    assert run.returncode == int(refused), run.stderr[-2000:]
    if refused:
        assert "hydra.sweeper.point_timeout_s" in run.stderr and str(WEEK_S) in run.stderr
