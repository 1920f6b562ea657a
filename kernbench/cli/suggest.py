"""``did you mean ...``: the closest names to a mistyped one, for every error line that
names something the user typed (a config key, a group option, a report column)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.75  # difflib's similarity below which a name is not offered
NEAR_BEST = 0.05  # offer only names about as close as the closest one
TAIL_WEIGHT = 0.75  # how much the last part of a dotted name counts
MIN_PREFIX = 3  # a last part this long that starts a choice's last part offers it


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` choices close to ``word``, the closest first. Dotted names are
    compared mostly by their last part (``acess_bytes`` finds ``workload.access_bytes``
    from anywhere) so that a shared ``topology.cube.memory_map.`` prefix does not make
    ``foo`` look like ``hbm_mapping_mode``. A last part that is the start of a choice's
    (``...pe_cost_model.fixed``, ``workload.access``) offers that choice first, whatever
    the similarity says: a truncated name is a short string far from the whole one."""
    choices = list(dict.fromkeys(choices))
    scores: dict[str, float] = {}
    last = word.rsplit(".", 1)[-1]
    starts = _started(word, choices)
    for choice in choices:
        whole = difflib.SequenceMatcher(None, word, choice).ratio()
        tail = difflib.SequenceMatcher(None, last, choice.rsplit(".", 1)[-1]).ratio()
        scores[choice] = TAIL_WEIGHT * tail + (1 - TAIL_WEIGHT) * whole
    if not scores:
        return []
    best = max(scores.values())
    ranked = sorted(scores, key=lambda c: -scores[c])
    near = [c for c in ranked if scores[c] >= max(CUTOFF, best - NEAR_BEST)]
    starts.sort(key=lambda c: -scores[c])
    return list(dict.fromkeys(starts + near))[:n]


def _started(word: str, choices: list[str]) -> list[str]:
    """Choices whose last part starts with ``word``'s last part (at least
    ``MIN_PREFIX`` characters), under the same parent if ``word`` names one that some
    such choice has, else under any."""
    parent, _, last = word.rpartition(".")
    if len(last) < MIN_PREFIX:
        return []
    found = [c for c in choices if c.rpartition(".")[2].startswith(last)]
    same = [c for c in found if c.rpartition(".")[0] == parent]
    return same or found


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean a or b?"``, or "" when nothing is close."""
    near = closest(word, choices)
    return f"; did you mean {' or '.join(near)}?" if near else ""
