"""The ``kernbench`` console script: answer what needs no simulator before loading it.

``kernbench --help``, ``--keys``, ``--version`` and an override that cannot be right
need the schema, ``conf/`` and Hydra's parser only; the simulator, pandas and pyarrow
(about half of a plain ``kernbench`` start-up) are imported once
:func:`kernbench.cli.entry.before_hydra` has let the command through, by importing
:mod:`kernbench.app`. ``python -m kernbench.app`` takes the same steps in the other
order (the app module first), with the same answers.
"""

from __future__ import annotations

import signal
import sys

from kernbench.cli.entry import before_hydra
from kernbench.sweep import stop


def main() -> None:
    """Console-script entry point (``kernbench``): :func:`kernbench.app.main`'s
    pre-Hydra step first, then the app itself. A Ctrl-C meanwhile (importing the app
    is about half a second, more on a loaded machine) stops it as it stops a run:
    one line and 130, not Python's traceback of the import it interrupted."""
    with stop.handled((signal.SIGINT,)):
        try:
            sys.argv[1:] = before_hydra(sys.argv[1:])  # needs no ConfigStore: reads conf/
            from kernbench import app  # the simulator, and register_configs: for a run

            stop.checkpoint()
        except KeyboardInterrupt:
            stop.run_interrupted()
        app.run()
