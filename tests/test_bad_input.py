"""DESIGN §7: each bad input gets one clear error naming the key and the limit,
a non-zero exit, and no result file that looks like a success."""

from __future__ import annotations

import os

import pytest
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import OmegaConf

from kernbench.config import flatten, validate
from kernbench.errors import ConfigError
from kernbench.results.table import rows_to_table
from tests.test_sweep import SMALL, merged, run_sweep

# (overrides, the key the error names, text stating the value and the limit)
VALIDATION_CASES = [
    (
        ["topology.cube.memory_map.hbm_pseudo_channels=60"],
        "topology.cube.memory_map.hbm_pseudo_channels",
        "60 is not divisible by topology.pes_per_cube = 8",
    ),
    (["topology.links.pe_noc_bw_gbs=0"], "topology.links.pe_noc_bw_gbs", "0.0 is not > 0"),
    (
        ["topology.cube.memory_map.hbm_channel_bw_gbs=-1"],
        "topology.cube.memory_map.hbm_channel_bw_gbs",
        "-1.0 is not > 0",
    ),
    (
        ["topology.links.noc_noc_latency_ns=-5"],
        "topology.links.noc_noc_latency_ns",
        "-5.0 is not >= 0",
    ),
    (
        ["topology.pe_mmu.page_size=3000"],
        "topology.pe_mmu.page_size",
        "3000 is not a power of two (nearest: 2048 or 4096)",
    ),
    (
        ["topology.cube.memory_map.interleave_bytes=0"],
        "topology.cube.memory_map.interleave_bytes",
        "0 is not a power of two",
    ),
    (
        ["topology.cube.memory_map.hbm_channels_per_pe=4"],
        "topology.cube.memory_map.hbm_channels_per_pe",
        "4 disagrees with hbm_pseudo_channels / pes_per_cube = 64 / 8 = 8",
    ),
    (["topology.pes_per_cube=0"], "topology.pes_per_cube", "0 is not >= 1"),
    (["topology.n_sips=17"], "topology.n_sips", "17 exceeds 16"),
    (
        ["topology.pes_per_cube=128", "topology.cube.memory_map.hbm_pseudo_channels=128"],
        "topology.pes_per_cube",
        "128 exceeds 64",
    ),
    (
        ["topology.cube.memory_map.hbm_channel_bytes=17179869184"],
        "topology.cube.memory_map.hbm_channel_bytes",
        "exceeds 2**36",
    ),
    (
        ["topology.pe.attrs.pe_cost_model.clock_freq_ghz=0"],
        "topology.pe.attrs.pe_cost_model.clock_freq_ghz",
        "0.0 is not > 0",
    ),
    (
        ["topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles=-1"],
        "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles",
        "-1.0 is not >= 0",
    ),
    (["workload.active_pes=17"], "workload.active_pes", "17 is neither 'all' nor a count in 1..16"),
    (["workload.active_pes=0"], "workload.active_pes", "0 is neither 'all' nor a count in 1..16"),
    (
        ["workload.bytes_per_pe=4294967296"],
        "workload.bytes_per_pe",
        "4294967296 exceeds a PE's HBM: 8 channels x 268435456 bytes = 2147483648",
    ),
    (["workload.align_offset_bytes=-4"], "workload.align_offset_bytes", "-4 is not >= 0"),
    (["workload.outstanding=0"], "workload.outstanding", "0 is not >= 1"),
    (  # was capped silently: 16, 32 and 64 in flight gave one time, rows said otherwise
        ["workload.outstanding=32"],
        "workload.outstanding",
        "32 exceeds topology.pe.dma_max_outstanding = 16",
    ),
    (
        ["topology.pe.dma_max_outstanding=2"],
        "workload.outstanding",
        "4 exceeds topology.pe.dma_max_outstanding = 2",
    ),
    # control messages cost size / bandwidth (DESIGN §13.1): neither may vanish
    (["topology.links.ctrl_bw_gbs=0"], "topology.links.ctrl_bw_gbs", "0.0 is not > 0"),
    (["topology.links.ctrl_bw_gbs=-8"], "topology.links.ctrl_bw_gbs", "-8.0 is not > 0"),
    (["topology.control.msg_header_bytes=0"], "topology.control.msg_header_bytes", "0 is not >= 1"),
    (["topology.control.pte_bytes=-16"], "topology.control.pte_bytes", "-16 is not >= 1"),
    (
        ["topology.control.baaw_segment_bytes=0"],
        "topology.control.baaw_segment_bytes",
        "0 is not >= 1",
    ),
    (
        ["+topology.cube.memory_map.foo=1"],
        "topology.cube.memory_map.foo",
        "no such key in topology.cube.memory_map (its keys: ",
    ),
    (["+workload.bogus=1"], "workload.bogus", "no such key in workload=stream (its keys: name,"),
    (["+extra=1"], "extra", "no such key in config (its keys: "),
    # issue 12: impossible numbers are refused, never reported as inf / 0
    (
        ["topology.cube.memory_map.hbm_channel_bw_gbs=inf"],
        "topology.cube.memory_map.hbm_channel_bw_gbs",
        "inf is not a finite number",
    ),
    (["topology.links.pcie_latency_ns=nan"], "topology.links.pcie_latency_ns", "nan is not"),
    (
        ["topology.pe.attrs.pe_cost_model.byte_cycles_recip=-inf"],
        "topology.pe.attrs.pe_cost_model.byte_cycles_recip",
        "-inf is not a finite number",
    ),
    (
        ["topology.cube.memory_map.hbm_channel_bw_gbs=1e308"],
        "topology.cube.memory_map.hbm_channel_bw_gbs",
        "1e+308 exceeds 1e+06 GB/s",
    ),
    (
        ["topology.links.noc_router_latency_ns=1e13"],
        "topology.links.noc_router_latency_ns",
        "10000000000000.0 exceeds 1e+12 ns (1000 s)",
    ),
    (
        ["topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles=1e308"],
        "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles",
        "1e+308 exceeds 1e+12 cycles",
    ),
    (  # fuzz: a 2^63 B header pushed simulated time past what a float holds: the run's
        # time stood still and a rate divided by zero. 1 MiB per header or entry.
        ["topology.control.msg_header_bytes=9223372036854775807"],
        "topology.control.msg_header_bytes",
        "9223372036854775807 exceeds 1048576 bytes",
    ),
    (
        ["topology.control.pte_bytes=1048577"],
        "topology.control.pte_bytes",
        "1048577 exceeds 1048576 bytes",
    ),
    (
        ["workload.access_bytes=8388608"],
        "workload.access_bytes",
        "8388608 exceeds workload.bytes_per_pe = 4194304",
    ),
    (  # fuzz: the allocator's error named no key. A PE's HBM is 8 x 256 MiB = 2^31 B;
        # the tensor is 2^31 + 256 B, placed on lcm(4096 B page, 8 x 256 B stripe) = 4096
        # B: 2^31 + 4096 = 2147487744 B
        ["workload.bytes_per_pe=2147483648", "workload.align_offset_bytes=256"],
        "workload.bytes_per_pe",
        "2147483648 + workload.align_offset_bytes 256, on 4096-byte alignment (whole"
        " topology.pe_mmu.page_size pages and topology.cube.memory_map.interleave_bytes x"
        " channels-per-PE stripes) = 2147487744, exceeds a PE's HBM: 8 channels x 268435456"
        " bytes = 2147483648",
    ),
    (  # fuzz: the allocator's error named no key. A KV head's group is 8 / 2 = 4 query
        # heads; 4 x 2^20 tokens = 2^22 rows x 128 x 2 B = 2^30 B for each of Q and O,
        # and 2048 x 128 x 2 = 2^19 B for each of K and V: 2^31 + 2^20 B > 2^31 B
        ["workload=gqa_opt2", "workload.query_tokens=1048576"],
        "workload.query_tokens",
        "Q and O (4194304 rows x 128 x 2 B = 1073741824 B each) and K and V (2048 tokens x"
        " 128 x 2 B = 524288 B each), on 4096-byte alignment (whole topology.pe_mmu.page_size"
        " pages and topology.cube.memory_map.interleave_bytes x channels-per-PE stripes) ="
        " 2148532224 B, exceed a PE's HBM: 8 channels x 268435456 bytes = 2147483648",
    ),
    (  # fuzz: a huge interleave granule named only the token keys. On topology=small
        # (8 channels per PE) the stripe is 8 x 2^28 = 2^31 B, so each of the 4 tensors
        # takes a whole 2^31 B PE's HBM: 2^33 B. The line names what sets the alignment
        [
            "topology=small",
            "workload=gqa_opt2",
            "workload.seq_tokens=256",
            "workload.tile_tokens=128",
            "workload.head_dim=16",
            "topology.cube.memory_map.interleave_bytes=268435456",
        ],
        "workload.seq_tokens",
        "on 2147483648-byte alignment (whole topology.pe_mmu.page_size pages and"
        " topology.cube.memory_map.interleave_bytes x channels-per-PE stripes) = 8589934592 B",
    ),
    (  # fuzz: a huge element named only the token keys. K and V: 2048 x 128 x 2^18 B =
        # 2^36 B each, past 2^31 whatever the token counts; the line names dtype_bytes
        ["workload=gqa_opt2", "workload.dtype_bytes=262144"],
        "workload.seq_tokens",
        "each x workload.head_dim x workload.dtype_bytes",
    ),
    (  # op=copy: src and dst, each 2^30 + 1 B on 4096 B: 2 x (2^30 + 4096) = 2147491840
        ["workload.op=copy", "workload.bytes_per_pe=1073741825"],
        "workload.bytes_per_pe",
        "1073741825 x 2 tensors (op=copy: src and dst), on 4096-byte alignment (whole"
        " topology.pe_mmu.page_size pages and topology.cube.memory_map.interleave_bytes x"
        " channels-per-PE stripes) = 2147491840,",
    ),
    (  # drains would outlast any time a run states (1e-300 gave sim_time_ns 1e303)
        ["topology.cube.memory_map.hbm_channel_bw_gbs=1e-300"],
        "topology.cube.memory_map.hbm_channel_bw_gbs",
        "1e-300 is below 0.001 GB/s (1 MB/s)",
    ),
    (
        ["topology.links.pcie_bw_gbs=0.000999"],
        "topology.links.pcie_bw_gbs",
        "0.000999 is below 0.001 GB/s",
    ),
    (  # fuzz: 5e-324 GHz made a cycle inf ns (an error not naming the key)
        ["topology.pe.attrs.pe_cost_model.clock_freq_ghz=5e-324"],
        "topology.pe.attrs.pe_cost_model.clock_freq_ghz",
        "5e-324 is below 0.001 GHz (1 MHz)",
    ),
    (["topology.pe.clock_ghz=0.0009"], "topology.pe.clock_ghz", "0.0009 is below 0.001 GHz"),
    (  # fuzz: the message named hbm_channel_bytes only, not the key that was set
        ["topology.cube.memory_map.hbm_pseudo_channels=1024", "topology.pes_per_cube=2"],
        "topology.cube.memory_map.hbm_channel_bytes",
        "2**36 = 68719476736, the PE offset field of the 51-bit PA"
        " (topology.cube.memory_map.hbm_pseudo_channels / topology.pes_per_cube x"
        " topology.cube.memory_map.hbm_channel_bytes)",
    ),
    (
        ["topology.cube.memory_map.hbm_channel_bytes=2048"],
        "workload.bytes_per_pe",
        "4194304 exceeds a PE's HBM: 8 channels x 2048 bytes = 16384"
        " (topology.cube.memory_map.hbm_pseudo_channels / topology.pes_per_cube x"
        " topology.cube.memory_map.hbm_channel_bytes)",
    ),
    (
        ["topology.cube.memory_map.interleave_bytes=1073741824"],
        "topology.cube.memory_map.hbm_channel_bytes",
        "is not a multiple of topology.cube.memory_map.interleave_bytes = 1073741824",
    ),
    (
        [
            "topology.pes_per_cube=1",
            "topology.cube.memory_map.hbm_pseudo_channels=8",
            "workload.active_pes=3",
        ],
        "workload.active_pes",
        "3 is neither 'all' nor a count in 1..2 (the topology's PEs: 1 SIP x 2 cubes x 1 PEs:"
        " topology.n_sips x topology.cubes_per_sip x topology.pes_per_cube)",
    ),
    (
        ["topology.cubes_per_sip=1", "workload.pattern=hotspot", "workload.hotspot_pe=8"],
        "workload.hotspot_pe",
        "8 is not a PE index in 0..7 (1 SIP x 1 cubes x 8 PEs: topology.n_sips x",
    ),
    (
        [
            "workload=gqa_opt2",
            "topology.cubes_per_sip=1",
            "topology.pes_per_cube=1",
            "topology.cube.memory_map.hbm_pseudo_channels=8",
        ],
        "workload.kv_heads",
        "2 exceeds the topology's 1 PEs (1 SIP x 1 cubes x 1 PEs: topology.n_sips x",
    ),
    # Triton, before any allocation (were torch/interpreter tracebacks, or host memory)
    (["workload=triton", "workload.size=0"], "workload.size", "0 is not >= 1 (a tensor size)"),
    (
        ["workload=triton", "workload.block_size=4194304"],
        "workload.block_size",
        "makes a block of 4194304 elements (workload.block_size = 4194304), more than"
        " Triton's largest block, 1048576 elements",
    ),
    (
        ["workload=triton", "workload.kernel=softmax", "workload.cols=1048577"],
        "workload.cols",
        "makes a block of 2097152 elements (workload.cols = 1048577)",
    ),
    (
        ["workload=triton", "workload.kernel=matmul", "workload.block_k=65536"],
        "workload.block_k",
        "makes a block of 4194304 elements (workload.block_m = 64, workload.block_k = 65536)",
    ),
    (
        ["workload=triton", "workload.size=9223372036854775807"],
        "workload.size",
        "9223372036854775807: vector_add's tensors hold 3 x size (x, y, out) ="
        " 27670116110564327421 elements of 4 B",
    ),
    (
        ["workload=triton", "workload.pes=1", "workload.size=268435456"],
        "workload.size",
        "= 3221225472 bytes, more than the HBM of the 1 PEs they are placed on (workload.pes):"
        " 1 x 2147483648 = 2147483648 bytes",
    ),
    (
        ["workload=triton", "workload.kernel=matmul", "workload.m=131072", "workload.k=131072"],
        "workload.m",
        "matmul's tensors hold m x k + k x n + m x n",
    ),
    (
        ["workload=triton", "workload.placement=replicate", "workload.size=2147483648"],
        "workload.size",
        "more than the HBM of the 8 PEs they are placed on (one cube's PEs (replicate))",
    ),
    (  # 2^64: beyond the int64 a result column holds
        ["workload.seed=18446744073709551616"],
        "workload.seed",
        "18446744073709551616 is outside the 64-bit integers a result holds (|x| < 2^63)",
    ),
    (  # -2^63 - 1
        ["workload.align_offset_bytes=-9223372036854775809"],
        "workload.align_offset_bytes",
        "-9223372036854775809 is outside the 64-bit integers",
    ),
]


@pytest.mark.parametrize(("overrides", "key", "limit"), VALIDATION_CASES, ids=lambda v: str(v))
def test_validation_error_names_key_and_limit(compose_cfg, overrides, key, limit):
    cfg = OmegaConf.to_object(compose_cfg(*overrides))
    given = flatten(cfg)
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: ")
    assert limit in str(info.value)
    # In place (the fast sweep's typed points), the same error, and the config is left
    # as given (its derived values unfilled): its error row is the stock path's.
    with pytest.raises(ConfigError) as again:
        validate(cfg, in_place=True)
    assert str(again.value) == str(info.value)
    assert flatten(cfg) == given


# Errors Hydra/OmegaConf raise while composing: (overrides, exception, texts it contains)
COMPOSITION_CASES = [
    (["topology.cube.memory_map.foo=1"], ConfigCompositionException, ["foo", "MemoryMapConfig"]),
    (["workload.bogus=1"], ConfigCompositionException, ["bogus", "StreamWorkloadConfig"]),
    (
        ["topology.pes_per_cube=abc"],
        ConfigCompositionException,
        ["topology.pes_per_cube", "Integer"],
    ),
    (["address.model=xx"], ConfigCompositionException, ["address.model", "pa, va, la"]),
    (["workload.op=zzz"], ConfigCompositionException, ["workload.op", "read, write, copy"]),
    (["workload=nope"], MissingConfigException, ["workload/nope", "stream"]),
]


@pytest.mark.parametrize(("overrides", "error", "texts"), COMPOSITION_CASES, ids=lambda v: str(v))
def test_composition_error_names_key(compose_cfg, overrides, error, texts):
    with pytest.raises(error) as info:
        compose_cfg(*overrides)
    message = f"{info.value} {info.value.__cause__ or ''}"
    assert all(text in message for text in texts), message


def test_unknown_key_in_a_yaml_file_is_an_error(compose_cfg, tmp_path):
    """YAML files are checked against the schema too, not only command-line overrides."""
    (tmp_path / "topology").mkdir()
    (tmp_path / "topology" / "typo.yaml").write_text("cube:\n  memory_map:\n    hbm_chanels: 4\n")
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg(f"hydra.searchpath=[file://{tmp_path}]", "topology=typo")
    assert "hbm_chanels" in f"{info.value} {info.value.__cause__}"


# Through the app: exit code, one stderr line, no success-looking result.
APP_VALIDATION_CASES = [
    (
        "topology.cube.memory_map.hbm_pseudo_channels=60",
        "topology.cube.memory_map.hbm_pseudo_channels: 60 is not divisible by "
        "topology.pes_per_cube = 8",
    ),
    ("topology.links.pe_noc_bw_gbs=0", "topology.links.pe_noc_bw_gbs: 0.0 is not > 0"),
    (
        "topology.cube.memory_map.hbm_channel_bw_gbs=-1",
        "topology.cube.memory_map.hbm_channel_bw_gbs: -1.0 is not > 0",
    ),
    ("topology.pe_mmu.page_size=3000", "topology.pe_mmu.page_size: 3000 is not a power of two"),
    (
        "topology.cube.memory_map.hbm_channel_bw_gbs=inf",
        "topology.cube.memory_map.hbm_channel_bw_gbs: inf is not a finite number",
    ),
    (
        "topology.cube.memory_map.hbm_channel_bw_gbs=1e308",
        "topology.cube.memory_map.hbm_channel_bw_gbs: 1e+308 exceeds 1e+06 GB/s",
    ),
    (
        "workload.access_bytes=8388608",
        "workload.access_bytes: 8388608 exceeds workload.bytes_per_pe = 4194304",
    ),
    (
        "topology.pe.tcm_bytes=18446744073709551616",
        "topology.pe.tcm_bytes: 18446744073709551616 is outside the 64-bit integers",
    ),
    (
        "workload.outstanding=64",
        "workload.outstanding: 64 exceeds topology.pe.dma_max_outstanding = 16 (the accesses"
        " a PE's DMA runs at once: raise it, or keep workload.outstanding within it)",
    ),
    ("topology.links.ctrl_bw_gbs=0", "topology.links.ctrl_bw_gbs: 0.0 is not > 0"),
    ("topology.control.pte_bytes=0", "topology.control.pte_bytes: 0 is not >= 1"),
]


@pytest.mark.parametrize(("override", "message"), APP_VALIDATION_CASES)
def test_app_rejects_bad_value(run_app, override, message):
    run = run_app(override)
    assert run.returncode != 0
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"kernbench: error: {message}")
    assert run.ok_rows() == []
    [row] = run.rows()
    assert row["status"] == "error"
    assert row["error"].startswith(message)


# Caught before Hydra composes (kernbench.cli.precheck): exactly one line each.
APP_COMPOSITION_CASES = [
    (
        "topology.cube.memory_map.foo=1",
        "topology.cube.memory_map.foo: no such key; topology.cube.memory_map has hbm_mapping_mode,"
        " hbm_pseudo_channels, hbm_channels_per_pe, hbm_channel_bw_gbs, hbm_channel_bytes,"
        " interleave_bytes, hbm_access_latency_ns (kernbench --help lists every key)",
    ),
    (  # '+' adds a key: the schemas take none (it named an internal class, later)
        "+workload.bogus=1",
        "workload.bogus: no such key; workload has access_bytes, active_pes,"
        " align_offset_bytes, bytes_per_pe, hotspot_pe, name, op, outstanding, pattern,"
        " seed; '+' adds a key, and the config takes none (kernbench --help lists every key)",
    ),
    (
        "workload=nope",
        "workload=nope: no such option; workload options: decoder_layer, gqa_opt2, gqa_opt3,"
        " gqa_pair, stream, triton",
    ),
    ("topology.pes_per_cube=abc", "topology.pes_per_cube=abc: not an integer"),
    ("workload.op=zzz", "workload.op=zzz: not one of read, write, copy"),
]


@pytest.mark.parametrize(("override", "message"), APP_COMPOSITION_CASES)
def test_app_rejects_bad_composition(run_app, override, message):
    run = run_app(override)
    assert run.returncode != 0
    assert run.stderr.splitlines() == [f"kernbench: error: {message}"]
    assert run.ok_rows() == []


def test_a_metric_that_overflows_is_an_error_not_an_ok_row(monkeypatch):
    """Inputs each in range can still multiply past float range: the run must fail."""
    from kernbench import simulate
    from kernbench.errors import KernBenchError
    from kernbench.workloads import WORKLOADS
    from tests.support import make_cfg

    def overflowing(system, w):
        return {"sim_time_ns": 1e308 * 10, "bytes_moved": 1}

    monkeypatch.setitem(WORKLOADS, "stream", overflowing)
    with pytest.raises(KernBenchError, match="metric sim_time_ns = inf"):
        simulate.run(make_cfg())


def test_simulate_run_validates_the_config_it_is_given():
    """simulate.run is a door of its own (tests, scripts): it validates, unlike
    run_validated, which the app calls on the config it has validated already. 64
    pseudo-channels cannot be split over 3 PEs."""
    from kernbench import simulate
    from kernbench.errors import ConfigError
    from tests.support import make_cfg

    cfg = make_cfg()  # valid, then broken after validation
    cfg.topology.pes_per_cube = 3
    with pytest.raises(ConfigError, match=r"topology\.pes_per_cube"):
        simulate.run(cfg)


def test_an_integer_beyond_int64_fails_its_point_and_loses_no_other_row(tmp_path):
    """One point asks for a seed of 2^64: it is an error row naming the key, and the
    other points' rows are merged (the seed column holds text, since no int64 holds
    2^64; before, the merge raised OverflowError and no table was written)."""
    proc, sweep = run_sweep(
        tmp_path,
        *SMALL,
        "workload.pattern=uniform",
        "workload.seed=0,1,18446744073709551616",
    )
    assert proc.returncode != 0  # one point failed
    rows = sorted(merged(sweep), key=lambda r: r["job_num"])
    assert [r["status"] for r in rows] == ["ok", "ok", "error"]
    assert [r["workload.seed"] for r in rows] == ["0", "1", "18446744073709551616"]
    assert rows[2]["error"].startswith("workload.seed: 18446744073709551616 is outside")


def test_a_column_with_an_integer_beyond_int64_is_text():
    table = rows_to_table([{"k": 1}, {"k": 1 << 64}, {"k": -(1 << 63)}])
    assert table.column("k").to_pylist() == ["1", str(1 << 64), str(-(1 << 63))]
    assert rows_to_table([{"k": (1 << 63) - 1}, {"k": -(1 << 63)}]).column("k").type == "int64"


def test_the_64_bit_limits_are_inclusive(compose_cfg):
    """2^63 - 1 and -2^63 are int64 values: the first is a valid seed, the second
    fails only the offset's own limit (>= 0), not the 64-bit one."""
    validate(OmegaConf.to_object(compose_cfg("workload.seed=9223372036854775807")))
    low = OmegaConf.to_object(compose_cfg("workload.align_offset_bytes=-9223372036854775808"))
    with pytest.raises(ConfigError, match="-9223372036854775808 is not >= 0"):
        validate(low)


@pytest.mark.parametrize("n_jobs", [0, -3 * (os.cpu_count() or 1), 100000])
def test_a_worker_count_out_of_range_is_one_error_and_writes_nothing(tmp_path, n_jobs):
    """0 ran one worker, 100000 forked one per point: both silently (issue 56). The
    limits come from this machine's cores: 1 to 4 per core, or -1 to -cores."""
    cores = os.cpu_count() or 1
    proc, sweep = run_sweep(tmp_path, *SMALL, "workload.access_bytes=512,4096", jobs=n_jobs)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"kernbench: error: hydra.launcher.n_jobs: {n_jobs} is not a worker count: 1 to"
        f" {4 * cores} (4 per core on {cores} cores), or -1 to -{cores} (cores + 1 +"
        " n_jobs: -1 is one per core)"
    ]
    assert not sweep.exists()


@pytest.mark.parametrize("n_jobs", [1, -1, -(os.cpu_count() or 1), 4 * (os.cpu_count() or 1)])
def test_a_worker_count_in_range_sweeps(tmp_path, n_jobs):
    proc, sweep = run_sweep(tmp_path, *SMALL, "workload.access_bytes=512,4096", jobs=n_jobs)
    assert proc.returncode == 0, proc.stderr
    assert len(merged(sweep)) == 2


@pytest.mark.parametrize("size", [-1, 0])
def test_a_chunk_size_below_one_is_one_error_and_writes_nothing(tmp_path, size):
    """-1 made empty chunks forever; 0 silently meant automatic sizing."""
    proc, sweep = run_sweep(
        tmp_path, *SMALL, "workload.seed=0,1", f"hydra.sweeper.chunk_size={size}"
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"kernbench: error: hydra.sweeper.chunk_size: {size} is not an integer >= 1 or auto"
        " (points per chunk; auto or unset sizes chunks automatically)"
    ]
    assert not sweep.exists()


def test_a_sweep_that_selects_no_value_is_one_error_and_writes_nothing(tmp_path):
    """glob(*) on a value key has no options to match: it was a 0-point sweep, exit 0."""
    proc, sweep = run_sweep(tmp_path, *SMALL, "workload.seed=glob(*)")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["kernbench: error: workload.seed=glob(*): selects no value"]
    assert not sweep.exists()


def test_the_slowest_bandwidth_allowed_is_1_mb_per_s(compose_cfg):
    validate(OmegaConf.to_object(compose_cfg("topology.links.pcie_bw_gbs=0.001")))


def test_as_many_in_flight_as_the_dma_takes_is_allowed(compose_cfg):
    """The limit is inclusive: the DMA runs ``dma_max_outstanding`` accesses at once."""
    validate(OmegaConf.to_object(compose_cfg("workload.outstanding=16")))
    validate(
        OmegaConf.to_object(
            compose_cfg("workload.outstanding=64", "topology.pe.dma_max_outstanding=64")
        )
    )


def test_control_message_sizes_of_one_byte_are_allowed(compose_cfg):
    keys = ("msg_header_bytes", "pte_bytes", "baaw_segment_bytes")
    validate(OmegaConf.to_object(compose_cfg(*(f"topology.control.{k}=1" for k in keys))))


def test_the_slowest_clock_allowed_is_1_mhz(compose_cfg):
    validate(OmegaConf.to_object(compose_cfg("topology.pe.clock_ghz=0.001")))
    validate(
        OmegaConf.to_object(compose_cfg("topology.pe.attrs.pe_cost_model.clock_freq_ghz=0.001"))
    )


@pytest.mark.parametrize(
    ("overrides", "fits"),
    [
        # 8 channels x 8192 B = 65536 B of HBM per PE; tensors on 4096 B
        (["workload.bytes_per_pe=65536"], True),
        (["workload.bytes_per_pe=65536", "workload.align_offset_bytes=256"], False),
        (["workload.op=copy", "workload.bytes_per_pe=32768"], True),
        (
            ["workload.op=copy", "workload.bytes_per_pe=32512", "workload.align_offset_bytes=256"],
            True,
        ),
        (["workload.op=copy", "workload.bytes_per_pe=32769"], False),
    ],
)
@pytest.mark.parametrize("address", ["pa", "va", "la"])
def test_a_stream_that_fills_its_pes_hbm_exactly_runs(run_app, overrides, fits, address):
    """The rule's limit is the allocator's: at it the run is ok, one byte of tensor
    past it (rounded to the 4096 B alignment) is one line naming the key."""
    run = run_app("topology=small", "topology.cube.memory_map.hbm_channel_bytes=8192",
                  "workload.access_bytes=4096", "workload.active_pes=1", f"address={address}",
                  "cache=false", *overrides)  # fmt: skip
    if fits:
        assert run.returncode == 0, run.stderr
        assert [r["status"] for r in run.rows()] == ["ok"]
    else:
        assert run.returncode == 1
        assert run.stderr.startswith("kernbench: error: workload.bytes_per_pe: ")
        assert "exceeds a PE's HBM: 8 channels x 8192 bytes = 65536" in run.stderr
