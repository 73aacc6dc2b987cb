"""The one exception type for faults a user can cause or fix; the CLI prints it as one line."""


class ZeroLossError(Exception):
    """A user-facing fault: the message names what is wrong and, where known, the fix."""

    def __init__(self, message: str, remedy: str | None = None):
        super().__init__(message)
        self.message = message
        self.remedy = remedy

    def __str__(self) -> str:
        return f"{self.message}: {self.remedy}" if self.remedy else self.message
