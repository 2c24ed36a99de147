"""Signals as exceptions, so that `finally` blocks (teardown) run.

SIGINT already raises KeyboardInterrupt in the main thread. SIGTERM (what
Snakemake, Slurm and `kill` send) and SIGHUP (a closed terminal) by default
end the process on the spot, skipping every `finally`. Inside
`signals_as_exceptions()` they raise `Terminated` instead.

`deferred_signals()` is the opposite tool: it holds SIGINT/SIGTERM/SIGHUP back
while a short critical step runs (create a resource and register it for
teardown; tear down), then delivers them, so that a signal never lands between
"created" and "registered".

Python runs signal handlers only in the main thread and only the main thread
may install them, so off the main thread both context managers do nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "signals_as_exceptions", "deferred_signals", "holding"]

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
INTERRUPTING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_held = 0  # deferred_signals blocks open in the main thread


def holding() -> bool:
    """True while a deferred_signals block runs: the step must run to its end."""
    return _held > 0


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM or SIGHUP arrives.

    A BaseException (like KeyboardInterrupt), so `except Exception` does not
    swallow it. `signum` is the signal number.
    """

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def _raise_terminated(signum, _frame):
    raise Terminated(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def signals_as_exceptions(
    signals: Iterable[int] = TERMINATING, *, only_if_default: bool = False
) -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into `Terminated` while the block runs.

    The previous handlers come back on exit. With `only_if_default=True`,
    signals whose handler is not SIG_DFL (the caller has its own plan, or
    ignores them) are left alone.
    """
    previous: dict[int, object] = {}
    if _in_main_thread():
        for sig in signals:
            prev = signal.getsignal(sig)
            if only_if_default and prev is not signal.SIG_DFL:
                continue
            previous[sig] = prev
            signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig, prev in previous.items():
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)


@contextmanager
def deferred_signals(signals: Iterable[int] = INTERRUPTING) -> Iterator[list[int]]:
    """Hold signals back while the block runs, then deliver the first one.

    Handlers that are SIG_IGN or were installed outside Python are left alone.
    On exit the previous handlers come back and, if a signal arrived, the
    handler it would have met runs now (raising KeyboardInterrupt or
    Terminated), or, for SIG_DFL, the signal is re-raised with its default
    action. Yields the list of signals received so far.
    """
    received: list[int] = []
    previous: dict[int, object] = {}

    def hold(signum, _frame):
        received.append(signum)

    global _held
    main = _in_main_thread()
    if main:
        for sig in signals:
            prev = signal.getsignal(sig)
            if prev is signal.SIG_IGN or prev is None:
                continue
            previous[sig] = prev
            signal.signal(sig, hold)
        _held += 1
    try:
        yield received
    finally:
        if main:
            _held -= 1
        for sig, prev in previous.items():
            signal.signal(sig, prev)
        if received:
            sig = received[0]
            prev = previous[sig]
            if callable(prev):
                prev(sig, None)
            else:  # SIG_DFL: the default action, now that we are done
                signal.raise_signal(sig)
