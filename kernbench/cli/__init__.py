"""The command line for people: typo help, the key list, ``--cfg job``, run warnings.

``kernbench.app`` calls :func:`kernbench.cli.precheck.precheck` on its arguments before
Hydra sees them, so a mistyped key, a wrong type or an unknown group option is one
line with a suggestion instead of Hydra's advice to add the key with ``+``; ``--help``
and ``--keys`` print the key list generated from the schema (:mod:`.keys`);
``--cfg job`` composes, validates and prints the config with its derived values
(:mod:`.show_config`). :mod:`.estimate` warns before a very long run.
"""
