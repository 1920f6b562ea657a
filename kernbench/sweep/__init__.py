"""Sweeps: the fast multirun (DESIGN §9) and merging every point's row into one table."""

from pathlib import Path

from kernbench.sweep.merge import MERGED_FILE, MergeOutcome, merge_sweep

__all__ = ["MERGED_FILE", "MergeOutcome", "merge_sweep"]


def _find_checkout_plugins() -> None:
    """Let Hydra find ``hydra_plugins/kernbench_sweep`` in a source checkout.

    Hydra discovers plugins with ``pkgutil.walk_packages`` over the ``hydra_plugins``
    namespace. A regular install puts the package in site-packages, where that works;
    setuptools' editable install maps it through an import hook that ``pkgutil`` cannot
    list, so the plugins would vanish unless the command runs from the checkout. Adding
    the checkout's folder to the namespace path fixes that; it changes nothing when the
    folder is absent (an installed copy).
    """
    try:
        import hydra_plugins
    except ImportError:
        return
    folder = Path(__file__).resolve().parents[2] / "hydra_plugins"
    if (folder / "kernbench_sweep").is_dir() and str(folder) not in list(hydra_plugins.__path__):
        hydra_plugins.__path__.append(str(folder))


_find_checkout_plugins()
