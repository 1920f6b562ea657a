"""KernBench: configuration-driven sweeps around a SimPy accelerator simulator."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kernbench")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"
