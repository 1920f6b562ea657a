"""Printing tables: one number format per column, short column names, natural order.

A column of numbers is printed in one format for every row (issue 14: ``4236`` beside
``1.101e+04`` reads as two kinds of figure): integers as integers, other numbers with
the decimals that give the column's largest value five significant digits (fewer when
every value needs fewer: ``0.125``, not ``0.1250``), and
scientific notation for the whole column only when its values are too large or too
small for that. Every report table (text and HTML) goes through :func:`format_table`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

SIGNIFICANT = 5
# Beyond these magnitudes fixed-point stops being readable: the column goes scientific.
FIXED_RANGE = (1e-3, 1e9)
BLANK = ""


def column_format(values: pd.Series) -> Callable[[Any], str]:
    """The one formatter for every value of a column."""
    numbers = [v for v in values if _is_number(v)]
    if not numbers or len(numbers) < values.notna().sum():
        return lambda v: BLANK if _missing(v) else str(v)
    if all(float(v).is_integer() for v in numbers):
        return lambda v: BLANK if _missing(v) else f"{int(v)}"
    top = max(abs(float(v)) for v in numbers)
    if top and not FIXED_RANGE[0] <= top < FIXED_RANGE[1]:
        return lambda v: BLANK if _missing(v) else f"{float(v):.{SIGNIFICANT - 1}e}"
    most = max(0, SIGNIFICANT - 1 - math.floor(math.log10(top))) if top else 0
    decimals = max(_decimals(float(v), most) for v in numbers)
    return lambda v: BLANK if _missing(v) else f"{float(v):.{decimals}f}"


def _decimals(value: float, most: int) -> int:
    """The fewest decimals (up to ``most``) that print ``value`` as ``most`` would."""
    target = round(value, most)
    return next(d for d in range(most + 1) if round(value, d) == target)


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as strings, one format per column, columns under their short names."""
    shown = pd.DataFrame({c: table[c].map(column_format(table[c])) for c in table.columns})
    return short_names(shown)


def format_value(value: Any) -> str:
    """One value on its own (a constant, a panel title): six significant digits."""
    if _is_number(value) and not float(value).is_integer():
        return f"{float(value):.6g}"
    return column_format(pd.Series([value], dtype=object))(value)


# Last parts that say nothing on their own (``address.model``, ``topology.name``): their
# group's name goes first (``address.model``), as the user typed the group.
VAGUE = frozenset({"model", "name", "mode", "kind", "type"})


def short_names(table: pd.DataFrame) -> pd.DataFrame:
    """The table with each dotted column named by its last part, where that is unique
    and says what it is; else by its last two parts, else in full."""
    names = {c: _short(c, table.columns) for c in table.columns}
    return table.rename(columns=names)


def short_name(column: str) -> str:
    """A dotted key named on its own as :func:`short_names` names a column: its last
    part (``outstanding``), or its last two where the last says nothing alone
    (``address.model``)."""
    return _short(column, pd.Index([column]))


def _short(column: str, columns: pd.Index) -> str:
    parts = column.split(".")
    for n in (1, 2):
        name = ".".join(parts[-n:])
        unique = sum(str(c).endswith("." + name) or c == name for c in columns) == 1
        if unique and (n > 1 or name not in VAGUE):
            return name
    return column


def natural_order(values: pd.Series) -> pd.Series:
    """A sort key putting numbers (also numbers written as text, like ``"16"``) in
    numeric order before words, and missing values last."""
    return values.map(_natural)


def _natural(value: Any) -> tuple[int, float, str]:
    if _missing(value):
        return (2, 0.0, "")
    if _is_number(value):
        return (0, float(value), "")
    text = str(value)
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _is_number(value: Any) -> bool:
    """A real number (numpy's too), not a bool and not missing."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool | np.bool_)
        and not _missing(value)
    )


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
