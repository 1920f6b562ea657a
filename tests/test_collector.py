"""The garbage collector during a run (kernbench.sim.collector): a run's short-lived
state is not walked again and again by the older generations, and the process's own
collector settings are what it set, before, during (where higher) and after a run.

Each case runs in a fresh interpreter, as a user's process meets it: the collector's
thresholds are the process's state, and this test process keeps its own. Each
collects once before what it counts: a middle collection comes after every 10 young
ones, counted from the last, so the imports' young collections would otherwise
decide whether one of the run's few is the tenth.
"""

from __future__ import annotations

import json

import pytest

from tests.support import run_python

# 1,024 PEs reading their neighbours 1:1, 4 accesses each: with CPython's default
# thresholds (700, 10, 10) the run itself made 138 young, 13 middle and 1 full
# collection (compiled and pure alike), walking the in-flight state of 1,024 PEs.
RUN = """
import gc, json, sys
from tests.test_bench_scale import scaled
from kernbench.sim.system import System
from kernbench.workloads import stream

gc.set_threshold(*json.loads(sys.argv[1]))
cfg = scaled(1024, "neighbor", "1:1", per_pe=4 * 256)
system = None
seen = {"collections": [0, 0, 0], "thresholds": []}

def count(phase, info):
    if phase == "start" and system is not None and system.running:
        seen["collections"][info["generation"]] += 1
        seen["thresholds"].append(list(gc.get_threshold()))

gc.collect()  # the middle generation's count starts here, not at the imports'
gc.callbacks.append(count)
system = System(cfg)
row = stream.run(system, cfg.workload)
seen["after"] = list(gc.get_threshold())
seen["accesses"] = row["accesses"]
print(json.dumps(seen))
"""


def collections_during_a_run(thresholds: tuple[int, int, int]) -> dict:
    done = run_python(RUN, json.dumps(thresholds))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_run_collects_young_objects_rarely_and_never_walks_the_oldest():
    seen = collections_during_a_run((700, 10, 10))
    assert seen["accesses"] == 1024 * 4
    young, middle, full = seen["collections"]
    # About 25 tracked allocations an access, 4,096 accesses: a young collection per
    # 50,000 allocations is 2 or 3 of them (the default made 138).
    assert young <= 4
    assert middle == 0 and full == 0
    assert all(t == [50_000, 10, 10] for t in seen["thresholds"])
    assert seen["after"] == [700, 10, 10]


@pytest.mark.parametrize("mine", [(200_000, 5, 7), (1_000, 20, 3)])
def test_the_process_keeps_its_own_settings(mine):
    """A threshold above the run's is kept inside the run too; every setting is the
    process's own again once the run ends."""
    seen = collections_during_a_run(mine)
    inside = [max(mine[0], 50_000), *mine[1:]]
    assert all(t == inside for t in seen["thresholds"])
    assert seen["after"] == list(mine)


# A tensor deployed over 1,024 PEs, a launch of 1,024 programs of 16 reads each, its
# kernels traced whole before the run (the replay path), and the tensor freed: each
# makes objects that live until the run retires them or the tensor is freed, none of
# them garbage, so each is collected as a run is. With CPython's default thresholds
# outside the run, the whole made 97 young, 9 middle and 1 full collection; collected
# as a run, deploy and free still made 26 young and 2 middle ones.
LAUNCH = """
import gc, json, sys
from kernbench import tl
from kernbench.runtime.context import DPPolicy, RuntimeContext
from tests.test_bench_scale import scaled
from kernbench.sim.system import System

gc.set_threshold(700, 10, 10)
cfg = scaled(1024, "local", "1:1")
seen = {"collections": [0, 0, 0], "traced_under": set()}
inside = False

def count(phase, info):
    if phase == "start" and inside:
        seen["collections"][info["generation"]] += 1

def kernel(src, reads):
    seen["traced_under"].add(tuple(gc.get_threshold()))
    base = src.shard_ptrs()[tl.program_id(0)]
    buf = tl.zeros((256,), dtype_bytes=1)
    for i in range(reads):
        tl.load(base + i * 256, (256,), 1, buf)

gc.collect()  # the middle generation's count starts here, not at the imports'
gc.callbacks.append(count)
system = System(cfg)
inside = True
with RuntimeContext(system) as ctx:
    src = ctx.deploy(1024 * 16 * 256, DPPolicy("column_wise", 1024))
    ends = ctx.launch(kernel, 1024, src, 16)
inside = False
seen["programs"] = len(ends)
seen["traced_under"] = sorted(seen["traced_under"])
seen["after"] = list(gc.get_threshold())
print(json.dumps(seen))
"""


def test_deploy_launch_and_free_are_collected_as_a_run_is():
    done = run_python(LAUNCH)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["programs"] == 1024
    assert seen["traced_under"] == [[50_000, 10, 10]]
    young, middle, full = seen["collections"]
    # 16,384 reads at about 25 tracked allocations each (the run's, as above), a young
    # collection per 50,000: 8 at most (6 measured).
    assert young <= 8
    assert middle == 0 and full == 0
    assert seen["after"] == [700, 10, 10]


# One point as a sweep simulates it (simulate.run: build the 1,024-PE system, deploy,
# launch, free, report), with CPython's default thresholds in the process. Building
# the system and the report make long-lived objects as the run does; held only
# around the run and the runtime's calls, the point made 48 young and 4 middle
# collections (compiled build); held around the point, 3 young.
POINT = """
import gc, json
from kernbench import simulate
from tests.test_bench_scale import scaled

gc.set_threshold(700, 10, 10)
cfg = scaled(1024, "local", "1:1")
seen = [0, 0, 0]

def count(phase, info):
    if phase == "start":
        seen[info["generation"]] += 1

gc.collect()  # the middle generation's count starts here, not at the imports'
gc.callbacks.append(count)
result = simulate.run_validated(cfg)
gc.callbacks.remove(count)
print(json.dumps({"collections": seen, "accesses": result.metrics["accesses"],
                  "after": list(gc.get_threshold())}))
"""


def test_a_whole_point_is_collected_as_a_run_is():
    done = run_python(POINT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["accesses"] == 1024
    young, middle, full = seen["collections"]
    assert young <= 4
    assert middle == 0 and full == 0
    assert seen["after"] == [700, 10, 10]
