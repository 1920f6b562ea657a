"""Reading a YAML record of a sweep or run directory in bounded time.

A sweep's records (``multirun.yaml``, ``.hydra/points.yaml``, a job's
``.hydra/config.yaml`` and ``hydra.yaml``) are read back by the report, by resume and by
the stock sweep's merge. They sit in a directory anyone can write to, and YAML's aliases
let 320 bytes name a billion nodes (nine lists of nine aliases to the list before):
``OmegaConf.load`` expands them, and kernbench-report hung past 180 s on one.

kernbench's own records hold no alias: they are dumped from fresh containers, and
PyYAML writes an alias only for an object met twice. So :func:`read_record` lets the
aliases of a record add at most :data:`ALIAS_NODES` nodes in all (one alias to an
anchor of n nodes adds n), refuses an alias inside its own anchor (a structure that
contains itself) and a file of more than ``max_bytes``, each as a :class:`RecordError`
naming the file, raised before anything is built, in milliseconds. What it returns is
plain containers (lists, dicts, scalars), parsed as OmegaConf's loader parses (its
implicit resolvers: ``1e3`` is a float), so a caller that wants a DictConfig makes one
from a bounded tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf._utils import get_yaml_loader
from yaml.events import AliasEvent

from kernbench.errors import printable

# The nodes every alias of one record may add, together: a hand-written record may
# share a small list; the alias bomb above adds 10^9.
ALIAS_NODES = 10_000
# The largest record read by default: a composed config is ~6 KB (multirun.yaml).
MAX_BYTES = 16 * 1024 * 1024

_C_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RecordError(ValueError):
    """A record that is not read: too large, not YAML, or past the alias limit.
    ``why`` says which (the message: ``<path>: not read (<why>)``)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{printable(str(path))}: not read ({why})")
        self.path = path
        self.why = why


class _FastLoader(_C_LOADER):  # type: ignore[misc,valid-type]
    """YAML's C safe loader with OmegaConf's implicit resolvers, for a text with no
    ``*`` (so no alias): a 6 KB ``multirun.yaml`` in 7 ms, where the counting loader
    below, pure Python, takes 56."""


class _CountingLoader(yaml.SafeLoader):
    """YAML's safe loader that counts what aliases add while composing, before any
    value is built (the composer shares an anchored node; building or converting the
    tree is what expands it)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # (names no base class uses: the scanner's ``done`` ends the stream)
        self.alias_added = 0  # nodes the aliases met so far add
        self.expanded_sizes: dict[int, int] = {}  # id(node) -> its nodes, aliases expanded
        self.composed: set[int] = set()  # ids of nodes composed whole

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            self._count(self.peek_event())
        node = super().compose_node(parent, index)
        self.composed.add(id(node))
        return node

    def _count(self, event: AliasEvent) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:  # an undefined alias: the composer says so
            return
        if id(node) not in self.composed:
            raise _AliasLimit("an alias inside its own anchor (a structure that holds itself)")
        self.alias_added += _size(node, self.expanded_sizes)
        if self.alias_added > ALIAS_NODES:
            raise _AliasLimit(
                f"they would add more than {ALIAS_NODES:,} nodes, where kernbench's own"
                " records hold none"
            )


class _AliasLimit(Exception):
    """Raised inside the loader; :func:`parse_record` names the file."""


for _loader in (_FastLoader, _CountingLoader):
    _loader.yaml_implicit_resolvers = get_yaml_loader().yaml_implicit_resolvers


def _size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """Nodes in ``node`` with its aliases expanded (a node is counted each time it is
    met), memoised by identity: composed nodes are shared, not copied."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    total = 1 + sum(_size(child, sizes) for child in children)
    sizes[id(node)] = total
    return total


def read_record(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """The YAML document at ``path`` as plain containers; :class:`RecordError` if it
    holds more than ``max_bytes``, is not UTF-8 or YAML, or its aliases pass the limit
    (see the module's docstring). A missing file raises FileNotFoundError, as ``open``."""
    return parse_record(read_text(path, max_bytes), path)


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``path``, refused (:class:`RecordError`) past ``max_bytes`` before it
    is read, or if it is not UTF-8."""
    size = path.stat().st_size
    if size > max_bytes:
        raise RecordError(path, f"{size:,} bytes, more than the {max_bytes:,} it may hold")
    try:
        return path.read_text()
    except UnicodeDecodeError as exc:
        raise RecordError(path, f"not UTF-8 text (byte {exc.start})") from None


def parse_record(text: str, path: Path) -> Any:
    """``text``, the contents of ``path``, as :func:`read_record` reads it."""
    loader = _CountingLoader if "*" in text else _FastLoader
    try:
        return yaml.load(text, Loader=loader)  # a safe loader: builds no object
    except _AliasLimit as exc:
        raise RecordError(path, f"YAML aliases: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise RecordError(path, f"not YAML{line}") from None
    except RecursionError:
        raise RecordError(path, "nested deeper than Python parses") from None
