"""Points that repeat another: run once, not once per value of a key they do not read.

A grid is a product: ``traffic=local,uniform workload.seed=0,1,2`` holds three local
points that differ only in a seed local never draws from. They would give the same
row three times, at three times the cost (the bandwidth study's seed axis would nearly
double its run time). :func:`drop_repeats` keeps the first point of each set whose
overrides differ only in keys their config leaves unread
(:func:`kernbench.config.unread.unread_keys`) and renumbers the rest in job order, so
the table holds each local configuration once (with the first seed swept) and each
uniform one per seed. The sweep says how many it dropped and why, in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hydra.core.override_parser.types import Override

from kernbench.config.unread import READ_BY_PATTERN, unread_keys
from kernbench.sweep.plan import Plan, Point
from kernbench.units import INT64_MAX

# Value overrides that can change which keys a point reads (its workload or pattern):
# with one of these the point's own config is composed to decide, else its shape's.
_DECIDING = ("workload", "workload.name", "workload.pattern")


@dataclass(frozen=True)
class Dropped:
    """How many points repeated another, and the keys they differed in."""

    count: int
    keys: tuple[str, ...]

    def describe(self, total: int) -> str:
        """One line for the sweep's log, or "" when nothing was dropped."""
        if not self.count:
            return ""
        why = ", ".join(f"{k} (read only by {_reader(k)})" for k in self.keys)
        return (
            f"{self.count} of {total} points repeat another point and run once: they"
            f" differ only in {why}"
        )


def _reader(key: str) -> str:
    return f"pattern {READ_BY_PATTERN[key]}"


def drop_repeats(plan: Plan) -> tuple[Plan, Dropped]:
    """``plan`` without the points that repeat an earlier one, renumbered from the
    first point's number; and what was dropped."""
    unread_of_shape = [unread_keys(shape.task) for shape in plan.shapes]
    seen: set[tuple] = set()
    kept: list[Point] = []
    keys: set[str] = set()
    for point in plan.points:
        unread = _unread(plan, point, unread_of_shape[point.shape])
        # a value no config could take (-1, 2^64) stays in the point: its error row
        read = tuple(v.input_line for v in point.values if not _unread_value(v, unread))
        identity = (point.shape, read)
        if identity in seen:
            keys.update(v.key_or_group for v in point.values if _unread_value(v, unread))
            continue
        seen.add(identity)
        kept.append(point)
    if len(kept) == len(plan.points):
        return plan, Dropped(0, ())
    first = plan.points[0].num
    renumbered = [replace(p, num=first + i) for i, p in enumerate(kept)]
    return Plan(renumbered, plan.shapes), Dropped(len(plan.points) - len(kept), tuple(sorted(keys)))


def _unread_value(value: Override, unread: frozenset[str]) -> bool:
    """Whether ``value`` sets an unread key to a value the key could hold (the seed and
    the hotspot PE: an integer in [0, 2^63)); an out-of-range one is left to make its
    point's error row, as it would have."""
    if value.key_or_group not in unread:
        return False
    given = value.value()
    return type(given) is int and 0 <= given <= INT64_MAX


def _unread(plan: Plan, point: Point, of_shape: frozenset[str]) -> frozenset[str]:
    """The keys ``point`` leaves unread: its shape's, unless one of its own values can
    change its workload or pattern (then its composed config decides)."""
    if not any(v.key_or_group in _DECIDING for v in point.values):
        return of_shape
    return unread_keys(plan.task_config(point))
