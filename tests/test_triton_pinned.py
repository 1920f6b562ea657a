"""Simulated results of Triton launches pinned bit for bit (issue 23's speed work must not
change them): per kernel, address model and channel mapping, a digest of the launch's
metrics row, the whole op log and the output bytes, for a first launch and a warm
relaunch on the same accelerator (what the launch caches must not alter), under both
fabric models. The digests were recorded with the code before the speed work
(``python tests/test_triton_pinned.py`` prints them), except that the PA points' were
recorded again when SimPy's clock started at 0.0 instead of the int 0 (their op logs'
first entries print as ``0.0``; with every op log time taken as a float, their digests
at the commit before and after that change agree), so both builds (tests/test_build.py)
print the same op log, and that the 5 fair 1:1 points' were recorded again when the fair
fabric's recomputations came to cover a requester's other queues (see
tests/test_fabric_pinned.py).
"""

from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("triton")

from kernbench.sim.system import System  # noqa: E402
from kernbench.triton.accelerator import compose_config  # noqa: E402
from kernbench.triton.workload import max_abs_error, run_case  # noqa: E402
from tests.test_triton_kernels import SIZES  # noqa: E402 (the same masked-tail sizes)

POINTS = [
    (kernel, model, mapping, fabric)
    for kernel in sorted(SIZES)
    for model, mapping in (("pa", "n_to_one"), ("va", "one_to_one"), ("la", "one_to_one"))
    for fabric in ("fair", "reservation")
]


def digest(kernel: str, model: str, mapping: str, fabric: str) -> str:
    cfg = compose_config(
        ["topology=small", f"workload.kernel={kernel}", *SIZES[kernel], f"address={model}"]
        + [f"channel_mapping={mapping}", f"sim.fabric={fabric}"]
    )
    system = System(cfg, oplog=True)
    row, acc, case = run_case(system, cfg.workload)
    again = acc.run(case.kernel, case.grid, *case.args, **case.kwargs).metrics  # warm
    again["max_abs_error"] = max_abs_error(acc, case)
    h = hashlib.sha256()
    for r in (row, again):
        h.update(repr(sorted(r.items())).encode())
    h.update(repr(system.oplog.entries).encode())
    for tensor, _ in case.expected:
        h.update(acc.to_torch(tensor).numpy().tobytes())
    return h.hexdigest()[:16]


PINNED: dict[tuple[str, str, str, str], str] = {
    ("decode_attention", "pa", "n_to_one", "fair"): "f7b9029dd30fffcc",
    ("decode_attention", "pa", "n_to_one", "reservation"): "f7b9029dd30fffcc",
    ("decode_attention", "va", "one_to_one", "fair"): "18690879fc9425de",
    ("decode_attention", "va", "one_to_one", "reservation"): "af2e27e6e74cec40",
    ("decode_attention", "la", "one_to_one", "fair"): "a5f64d74a06ecf59",
    ("decode_attention", "la", "one_to_one", "reservation"): "6f51147e6c0e9a25",
    ("layer_norm", "pa", "n_to_one", "fair"): "2d7b7c17baf4fe86",
    ("layer_norm", "pa", "n_to_one", "reservation"): "d7cd0195a8b7265e",
    ("layer_norm", "va", "one_to_one", "fair"): "00df5ab2e7be14e1",
    ("layer_norm", "va", "one_to_one", "reservation"): "36487e0e9dfeb35d",
    ("layer_norm", "la", "one_to_one", "fair"): "3dc1b39075c409fe",
    ("layer_norm", "la", "one_to_one", "reservation"): "435103c7bfe0ba63",
    ("matmul", "pa", "n_to_one", "fair"): "fa67548020ab1d06",
    ("matmul", "pa", "n_to_one", "reservation"): "37ae2ec21c9d9cb7",
    ("matmul", "va", "one_to_one", "fair"): "f58731d9b486c7f5",
    ("matmul", "va", "one_to_one", "reservation"): "4ca3bf9bb1c52fa5",
    ("matmul", "la", "one_to_one", "fair"): "0f4aa0c2bc6c5d72",
    ("matmul", "la", "one_to_one", "reservation"): "69ad6d602124abb2",
    ("softmax", "pa", "n_to_one", "fair"): "711af9df10df2fb7",
    ("softmax", "pa", "n_to_one", "reservation"): "fb4ff413f36b12f9",
    ("softmax", "va", "one_to_one", "fair"): "2b4da9d207e740ac",
    ("softmax", "va", "one_to_one", "reservation"): "e754dbb8d2f94036",
    ("softmax", "la", "one_to_one", "fair"): "9b2b17b913e8f8ce",
    ("softmax", "la", "one_to_one", "reservation"): "7039be4b4ded5289",
    ("vector_add", "pa", "n_to_one", "fair"): "f488e2733d7125fc",
    ("vector_add", "pa", "n_to_one", "reservation"): "937872580c55a094",
    ("vector_add", "va", "one_to_one", "fair"): "2292140ecbde244c",
    ("vector_add", "va", "one_to_one", "reservation"): "c8210893045a878b",
    ("vector_add", "la", "one_to_one", "fair"): "994c9c4d1e5d56e7",
    ("vector_add", "la", "one_to_one", "reservation"): "0dc7acb55cdf7a7b",
}


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "-".join(p))
def test_launch_results_are_pinned(point):
    assert digest(*point) == PINNED[point]


if __name__ == "__main__":
    for p in POINTS:
        print(f"    {p!r}: {digest(*p)!r},")
