"""A sweep's private Ray instance listens on 127.0.0.1 only (issue 56).

Under ``hydra/launcher=ray`` without a cluster to join, the sweep starts a private Ray
instance; ``ray.init`` bound its GCS, raylets, workers and dashboard agent to every
interface (``0.0.0.0``, ``::``, the machine's own address), so anyone who could reach
the machine could hand that cluster code to run as the user sweeping. The test runs
such a sweep in a subprocess and, while it runs, reads every listening TCP socket
(``/proc/net/tcp`` and ``tcp6``, state ``0A``) held by the sweep's process or any of
its descendants (a socket's inode, found among a process's ``/proc/<pid>/fd``): each
must be on a loopback address, and the GCS, the raylet and a worker must be among them
(so that the check saw the cluster at all). Joining a named cluster is tests/test_ray.py's.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from pathlib import Path

import pytest

from kernbench.sweep.stop import descendants
from tests.test_launchers import command, environment

pytestmark = pytest.mark.slow
pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the ray extra is not installed")

# Two points of a few tenths of a second each, a chunk each, on a one-CPU instance.
GRID = (
    "topology=small",
    "hydra.sweeper.chunk_size=1",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=2097152",
    "workload.outstanding=1,2",
    "cache=false",
    "hydra/launcher=ray",
    "+hydra.launcher.ray.init.num_cpus=1",
)
LISTEN = "0A"


def listening() -> dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every listening TCP socket of this network namespace: inode -> address."""
    found = {}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN:
                found[fields[9]] = _address(fields[1].split(":")[0])
    return found


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as ``/proc/net/tcp*`` shows it: 32-bit words in host (little
    endian) byte order."""
    raw = bytes.fromhex(hex_address)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def sockets(pid: int) -> set[str]:
    """The inodes of the sockets ``pid`` holds open."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    except OSError:  # ended meanwhile
        pass
    return inodes


def name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().strip()
    except OSError:
        return "?"


def test_a_private_ray_instance_listens_on_loopback_only(tmp_path):
    proc = subprocess.Popen(
        command(tmp_path / "sweep", *GRID),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[tuple[str, str], str] = {}  # (process, address:port inode) -> address
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            bound = listening()
            for pid in [proc.pid, *descendants(proc.pid)]:
                for inode in sockets(pid) & bound.keys():
                    seen[(name(pid), inode)] = str(bound[inode])
            time.sleep(0.1)
        stderr = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    wide = {k: a for k, a in seen.items() if not is_loopback(ipaddress.ip_address(a))}
    assert not wide, f"listening beyond this machine: {sorted(wide.items())}"
    names = {process for process, _ in seen}
    assert any(n.endswith("gcs_server") for n in names), names
    assert any(n.endswith("raylet") for n in names), names
    assert any(n.startswith("ray::") and "Agent" not in n for n in names), names  # a worker
