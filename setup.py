"""The compiled build: mypyc compiles the simulator's hot modules when it can.

pyproject.toml holds everything else about the package; this file only adds the
extension modules. With a working C compiler (and Python's headers) the modules in
``HOT`` are compiled with mypyc into one group whose shared runtime library lives inside
the package (``kernbench/_mypyc__mypyc*.so``), so an editable install's subprocesses
find it from any directory. Without a compiler, without mypyc, or with
``KERNBENCH_PURE=1`` set at build time, nothing is compiled and the install is the
pure-Python package. Either way every ``.py`` file is installed, so ``KERNBENCH_PURE=1``
at run time can load them instead of the compiled modules (kernbench/__init__.py);
``kernbench.build()`` says which ran.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
import tempfile

from setuptools import setup

# What a stream access runs through (docs/explanation/speed.md, "Compiled build").
# Left pure: kernbench/sim/speed.py (it measures bare SimPy, which must stay bare
# Python), the packages' __init__.py files, kernbench/topology/views.py (the whole
# topology as collections.abc views, for tests and set-up, never per access), and
# kernbench/runtime/context.py (once per deploy and launch, not per access; compiled,
# its tensors' weakref finalisers crashed the process).
HOT = [
    "kernbench/commands.py",
    "kernbench/tl.py",
    "kernbench/timebase.py",
    "kernbench/runtime/exec_paths.py",
    "kernbench/address/allocator.py",
    "kernbench/address/interleave.py",
    "kernbench/address/baaw.py",
    "kernbench/address/la.py",
    "kernbench/address/models.py",
    "kernbench/address/page_table.py",
    "kernbench/address/pa.py",
    "kernbench/address/pa_model.py",
    "kernbench/address/registry.py",
    "kernbench/address/segment.py",
    "kernbench/address/sorted_tables.py",
    "kernbench/address/va.py",
    "kernbench/topology/graph.py",
    "kernbench/topology/layout.py",
    "kernbench/topology/names.py",
    "kernbench/topology/routes.py",
    "kernbench/sim/control.py",
    "kernbench/sim/cost_model.py",
    "kernbench/sim/cpu.py",
    "kernbench/sim/dma.py",
    "kernbench/sim/endpoints.py",
    "kernbench/sim/engines.py",
    "kernbench/sim/events.py",
    "kernbench/sim/fabric.py",
    "kernbench/sim/fair_fabric.py",
    "kernbench/sim/flows.py",
    "kernbench/sim/messages.py",
    "kernbench/sim/metrics.py",
    "kernbench/sim/oplog.py",
    "kernbench/sim/scheduler.py",
    "kernbench/sim/system.py",
]
# Hot modules whose compiled build is written in C by hand (module source -> C source):
# progressive filling, on C arrays where mypyc would box every list element, and the PE
# queue's heap, comparing its entries' times and eids in C (the .py is the pure build,
# the specification the C follows step for step; see each .c's header).
NATIVE = {
    "kernbench/sim/fairshare.py": "kernbench/sim/fairshare.c",
    "kernbench/sim/eventheap.py": "kernbench/sim/eventheap.c",
}
# The C must do the .py's float operations exactly: no fused multiply-add.
NATIVE_FLAGS = ["-ffp-contract=off"]
# The shared runtime library: kernbench/_mypyc__mypyc*.so (mypyc appends "__mypyc").
GROUP = "kernbench._mypyc"
# What each compiled module's source was when it was compiled (sha256 by path), beside
# the modules: kernbench/__init__.py runs the .py sources instead when one has changed
# since (an editable install edited and not rebuilt).
MANIFEST = "kernbench/_compiled.json"
# -O1: as fast as -O2 and -O3 here, within the noise of a loaded 2-core machine, for
# about 35 s of compile time instead of 50-55 (docs/explanation/speed.md, "Compiled build").
OPT_LEVEL = "1"


def _say(message: str) -> None:
    print(f"kernbench build: {message}", file=sys.stderr)


def _compiler_works() -> bool:
    """True if a C compiler builds a file that includes Python.h (headers present)."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.errors import CCompilerError, DistutilsError
    from setuptools._distutils.sysconfig import customize_compiler, get_python_inc

    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("#include <Python.h>\nint kernbench_probe(void) { return 0; }\n")
        try:
            compiler.compile([src], output_dir=tmp, include_dirs=[get_python_inc()])
        except (CCompilerError, DistutilsError, OSError) as exc:
            _say(f"no working C compiler ({exc}); installing the pure-Python modules")
            return False
    return True


def ext_modules() -> list:
    modules = _compiled_modules()
    if not modules:
        _remove_earlier_build()
    return modules


def _compiled_modules() -> list:
    """mypyc's extension modules for HOT and the C ones of NATIVE, or none (with the
    one line saying why)."""
    if os.environ.get("KERNBENCH_PURE") == "1":
        _say("KERNBENCH_PURE=1: installing the pure-Python modules")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("mypyc is not installed; installing the pure-Python modules")
        return []
    if not _compiler_works():
        return []
    try:
        modules = mypycify(
            ["--config-file=", "--ignore-missing-imports", "--follow-imports=silent", *HOT],
            opt_level=OPT_LEVEL,
            group_name=GROUP,
        )
    except SystemExit as exc:  # mypyc reports type errors by exiting
        # An install that works beats one that fails; KERNBENCH_EXPECT_BUILD=compiled
        # (CI) turns this fallback into a failing test.
        _say(f"mypyc could not compile the hot modules ({exc}); installing them pure")
        return []
    _write_manifest()
    return [*modules, *_native_modules()]


def _native_modules() -> list:
    from setuptools import Extension

    return [
        Extension(
            path[: -len(".py")].replace("/", "."), [c_source], extra_compile_args=NATIVE_FLAGS
        )
        for path, c_source in NATIVE.items()
    ]


def _remove_earlier_build() -> None:
    """Delete what an earlier compiled build left in the source tree (an editable
    install compiles in place): its modules sit beside the sources and would still be
    imported, compiled from whatever the sources were then, by a build that compiled
    nothing (``KERNBENCH_PURE=1 pip install -e .`` reported itself compiled)."""
    stems = [path[: -len(".py")] for path in [*HOT, *NATIVE]]
    stems.append(GROUP.replace(".", "/") + "__mypyc")
    names = [stem + suffix for stem in stems for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    found = [name for name in [*names, MANIFEST] if os.path.exists(name)]
    for name in found:
        os.remove(name)
    if found:
        _say(f"removed {len(found)} file(s) an earlier compiled build left, e.g. {found[0]}")


def _write_manifest() -> None:
    """Record the sources just compiled (MANIFEST), for the check at import."""
    sources = {}
    for path in [*HOT, *NATIVE, *NATIVE.values()]:
        with open(path, "rb") as f:
            sources[path] = hashlib.sha256(f.read()).hexdigest()
    with open(MANIFEST, "w") as f:
        json.dump(sources, f, indent=0, sort_keys=True)
        f.write("\n")


setup(ext_modules=ext_modules())
