"""mlaops.Error: a failed operator call (docs/python.md)."""


class Error(RuntimeError):
    """An operator call the library refused.

    ``status`` is the aclnnStatus code (161001 null pointer, 161002 invalid parameter, ...),
    ``message`` the library's message ("<function>: <parameter>: <rule>; allowed ..., got ...").
    Nothing was written to any output or cache when this is raised.
    """

    def __init__(self, status, message):
        super().__init__(f"[{status}] {message}")
        self.status = status
        self.message = message


def check(result):
    """Raises Error for a failed (status, message, ...) result of the extension module."""
    status, message = result[0], result[1]
    if status != 0:
        raise Error(status, message)
