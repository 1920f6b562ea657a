"""KernBench's Hydra plugins: ``hydra/sweeper=kernbench`` and ``hydra/launcher=kernbench``.

A thin entry: Hydra instantiates plugins only from the ``hydra_plugins`` namespace
package, so the classes are declared here and their work lives in
:mod:`kernbench.sweep.sweeper` (DESIGN §9).
"""
