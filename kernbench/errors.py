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


# Control characters as an error line shows them: a value typed with a newline (a quoted
# one, or a shell's $'...') must not split the line that quotes it.
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, 0x85)}
_ESCAPES |= {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def one_line(text: str) -> str:
    """``text`` with every character that ends or breaks a line escaped (``\\n``), so
    an error that quotes what was typed stays the one line it is meant to be."""
    return text.translate(_ESCAPES)


def error_line(exc: BaseException) -> str:
    """``exc`` as one line: its type and the first line of its message (another
    library's error, e.g. Ray's, can run to many)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
