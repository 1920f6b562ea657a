"""The error types users see. Each message names the key or address and the limit."""


class KernBenchError(Exception):
    """Base of every error KernBench raises on bad input."""


class ConfigError(KernBenchError):
    """A configuration value breaks a rule; the message names the dotted key and the limit."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


class AddressFault(KernBenchError):
    """An access falls outside every mapping, segment or allocation."""


class AllocationError(KernBenchError):
    """An allocation does not fit in the free memory of its allocator."""


def printable(text: str) -> str:
    """``text`` as UTF-8 can hold it: bytes a command line could not decode (Python
    keeps them as lone surrogates, which no YAML or Parquet file can hold) as ``\\xff``."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its type and the first line of its message (another
    library's error, e.g. Ray's, can run to many)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
