"""``did you mean ...``: the closest names to a mistyped one, for every error line that
names something the user typed (a config key, a group option, a report column)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` choices close to ``word``: by the whole dotted name, then by its last
    part (``acess_bytes`` finds ``workload.access_bytes`` from anywhere)."""
    pool = list(dict.fromkeys(choices))
    found = difflib.get_close_matches(word, pool, n=n, cutoff=0.75)
    last = word.rsplit(".", 1)[-1]
    by_last = {c.rsplit(".", 1)[-1]: c for c in pool}
    more = difflib.get_close_matches(last, list(by_last), n=n, cutoff=0.75)
    return list(dict.fromkeys([*found, *(by_last[m] for m in more)]))[:n]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean a or b?"``, or "" when nothing is close."""
    near = closest(word, choices)
    return f"; did you mean {' or '.join(near)}?" if near else ""
