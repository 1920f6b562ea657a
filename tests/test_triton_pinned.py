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
tests/test_fabric_pinned.py). The digests left the output values (and
``max_abs_error``) out from 2026-12-02, when they were recorded again: the values
depended on the host's BLAS kernel (the matmul and decode_attention digests failed on
an AMD EPYC host). At that commit the old digests, values included, all held under
``OPENBLAS_CORETYPE=Haswell``, and the new ones are the same under the default kernel,
Haswell's and SkylakeX's. Every digest was recorded again, once, for issue 35 (DESIGN
§13.1): reads are round trips over the reverse links, HBM is half-duplex, and install
messages cost their size (VA and LA launches start later); both builds agree.
"""

from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

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
    """The launches' metrics rows and the op log, bit for bit. Not the output values:
    ``tl.dot`` runs on the host's BLAS (numpy's OpenBLAS picks its kernel by CPU), whose
    last bits differ between machines (AMD EPYC's default kernel against Haswell's or
    Zen's); :func:`test_a_warm_launch_computes_what_the_first_did` checks them."""
    cfg = compose_config(
        ["topology=small", f"workload.kernel={kernel}", *SIZES[kernel], f"address={model}"]
        + [f"channel_mapping={mapping}", f"sim.fabric={fabric}"]
    )
    system = System(cfg, oplog=True)
    row, acc, case = run_case(system, cfg.workload)
    again = acc.run(case.kernel, case.grid, *case.args, **case.kwargs).metrics  # warm
    h = hashlib.sha256()
    for r in (row, again):
        h.update(repr(sorted((k, v) for k, v in r.items() if k != "max_abs_error")).encode())
    h.update(repr(system.oplog.entries).encode())
    return h.hexdigest()[:16]


PINNED: dict[tuple[str, str, str, str], str] = {
    ("decode_attention", "pa", "n_to_one", "fair"): "ba8a77d098759328",
    ("decode_attention", "pa", "n_to_one", "reservation"): "ba8a77d098759328",
    ("decode_attention", "va", "one_to_one", "fair"): "27f22a5036e789c7",
    ("decode_attention", "va", "one_to_one", "reservation"): "1d423ce09c1a228b",
    ("decode_attention", "la", "one_to_one", "fair"): "a3e0ffb30f19ebe3",
    ("decode_attention", "la", "one_to_one", "reservation"): "0fbe8b32b1d4ef6d",
    ("layer_norm", "pa", "n_to_one", "fair"): "1a92bbc0c9ba10b6",
    ("layer_norm", "pa", "n_to_one", "reservation"): "a2c1ad6b57c48767",
    ("layer_norm", "va", "one_to_one", "fair"): "b3955da5f2ef99c6",
    ("layer_norm", "va", "one_to_one", "reservation"): "173688c9682a1e5f",
    ("layer_norm", "la", "one_to_one", "fair"): "785e877e301e3caa",
    ("layer_norm", "la", "one_to_one", "reservation"): "362625e15aa6ab9f",
    ("matmul", "pa", "n_to_one", "fair"): "8306722b9cef2791",
    ("matmul", "pa", "n_to_one", "reservation"): "759efc842763bdcf",
    ("matmul", "va", "one_to_one", "fair"): "4870c96ffd60e63f",
    ("matmul", "va", "one_to_one", "reservation"): "40283f0e538fbdd7",
    ("matmul", "la", "one_to_one", "fair"): "fda00c8b8d221485",
    ("matmul", "la", "one_to_one", "reservation"): "125c7b4f99ae396e",
    ("softmax", "pa", "n_to_one", "fair"): "00b26fc5f2f6aaca",
    ("softmax", "pa", "n_to_one", "reservation"): "04fc722d58c8b032",
    ("softmax", "va", "one_to_one", "fair"): "abe0963ecfb1c1ec",
    ("softmax", "va", "one_to_one", "reservation"): "6a60d6013dd1e915",
    ("softmax", "la", "one_to_one", "fair"): "4685bd9b7450b9b1",
    ("softmax", "la", "one_to_one", "reservation"): "a9e319ca878194c0",
    ("vector_add", "pa", "n_to_one", "fair"): "ce89e9a0a7213a45",
    ("vector_add", "pa", "n_to_one", "reservation"): "8597c326673bb8c4",
    ("vector_add", "va", "one_to_one", "fair"): "0c27a10aff56a4e1",
    ("vector_add", "va", "one_to_one", "reservation"): "5fd9e4088efd4e25",
    ("vector_add", "la", "one_to_one", "fair"): "80767492987373a3",
    ("vector_add", "la", "one_to_one", "reservation"): "a2e1890e67199af2",
}


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "-".join(p))
def test_launch_results_are_pinned(point):
    assert digest(*point) == PINNED[point]


@pytest.mark.parametrize("kernel", sorted(SIZES))
def test_a_warm_launch_computes_what_the_first_did(kernel):
    """What the launch caches keep must not alter a relaunch's output values: the warm
    launch leaves the first one's bytes exactly (on this host's BLAS), within the
    dtype's tolerance of torch's."""
    cfg = compose_config(["topology=small", f"workload.kernel={kernel}", *SIZES[kernel]])
    row, acc, case = run_case(System(cfg), cfg.workload)
    first = [acc.to_torch(t).numpy().tobytes() for t, _ in case.expected]
    acc.run(case.kernel, case.grid, *case.args, **case.kwargs)
    assert [acc.to_torch(t).numpy().tobytes() for t, _ in case.expected] == first
    assert max_abs_error(acc, case) == row["max_abs_error"]
    for tensor, expected in case.expected:
        torch.testing.assert_close(acc.to_torch(tensor), expected)


if __name__ == "__main__":
    for p in POINTS:
        print(f"    {p!r}: {digest(*p)!r},")
