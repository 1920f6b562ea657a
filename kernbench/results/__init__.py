"""Result tables: rows with config, identity, status and metrics, written as Parquet."""

from kernbench.results.identity import config_hash, git_commit, identity
from kernbench.results.table import (
    RESULT_FILE,
    STATUS_ERROR,
    STATUS_OK,
    config_columns,
    make_row,
    rows_to_table,
    write_rows,
    write_table_atomic,
)

__all__ = [
    "RESULT_FILE",
    "STATUS_ERROR",
    "STATUS_OK",
    "config_columns",
    "config_hash",
    "git_commit",
    "identity",
    "make_row",
    "rows_to_table",
    "write_rows",
    "write_table_atomic",
]
