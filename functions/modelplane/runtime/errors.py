"""Why the server cannot start or had to stop: each a one-line message, never a traceback."""


class StartupError(Exception):
    """The server cannot start; the message says why in one line."""


class CrashLoopError(Exception):
    """The server stopped because its workers keep dying; the message says why."""


class PoolError(Exception):
    """The compute processes cannot start; the message says why in one line."""
