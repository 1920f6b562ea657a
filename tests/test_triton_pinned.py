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
Haswell's and SkylakeX's.
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
    ("decode_attention", "pa", "n_to_one", "fair"): "605c9993b8ea15fe",
    ("decode_attention", "pa", "n_to_one", "reservation"): "605c9993b8ea15fe",
    ("decode_attention", "va", "one_to_one", "fair"): "696ea902c0cf62e0",
    ("decode_attention", "va", "one_to_one", "reservation"): "c8da2653aa6d0807",
    ("decode_attention", "la", "one_to_one", "fair"): "6b370880c4a612b7",
    ("decode_attention", "la", "one_to_one", "reservation"): "2098325f341cb3ca",
    ("layer_norm", "pa", "n_to_one", "fair"): "53677f802e0dcfbf",
    ("layer_norm", "pa", "n_to_one", "reservation"): "3cb6460436536009",
    ("layer_norm", "va", "one_to_one", "fair"): "8b178211399bb100",
    ("layer_norm", "va", "one_to_one", "reservation"): "ed61fa06eae56eca",
    ("layer_norm", "la", "one_to_one", "fair"): "33f287207e82bf8a",
    ("layer_norm", "la", "one_to_one", "reservation"): "83db3caa2ac06bfe",
    ("matmul", "pa", "n_to_one", "fair"): "6e7a669a7b0914e6",
    ("matmul", "pa", "n_to_one", "reservation"): "eb2d865ce6a774d8",
    ("matmul", "va", "one_to_one", "fair"): "43991c406fde411d",
    ("matmul", "va", "one_to_one", "reservation"): "f2cf778efed858ed",
    ("matmul", "la", "one_to_one", "fair"): "d714c36078b7a7da",
    ("matmul", "la", "one_to_one", "reservation"): "a487a32c160f0066",
    ("softmax", "pa", "n_to_one", "fair"): "21f1fea02880b128",
    ("softmax", "pa", "n_to_one", "reservation"): "ea5f570a7d9e996f",
    ("softmax", "va", "one_to_one", "fair"): "9ef529b711537e6d",
    ("softmax", "va", "one_to_one", "reservation"): "d31f7e946ecced6c",
    ("softmax", "la", "one_to_one", "fair"): "c61c3a4a7f1c982d",
    ("softmax", "la", "one_to_one", "reservation"): "d25353614385cf10",
    ("vector_add", "pa", "n_to_one", "fair"): "0e6b5ad365447453",
    ("vector_add", "pa", "n_to_one", "reservation"): "d3b8003ea5ee6d9a",
    ("vector_add", "va", "one_to_one", "fair"): "a6aa85e31e47e497",
    ("vector_add", "va", "one_to_one", "reservation"): "e9955893ffaa7970",
    ("vector_add", "la", "one_to_one", "fair"): "2f25ed1b7995a377",
    ("vector_add", "la", "one_to_one", "reservation"): "c141916f71d088c2",
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
