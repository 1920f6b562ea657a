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
