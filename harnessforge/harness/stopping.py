"""Stopping a run on request (Ctrl-C, SIGTERM): after the current tool call is recorded, its sandbox closed,
nothing marked finished that did not finish; the same command resumes from the log. A second Ctrl-C stops
at once (as a kill does, and a kill resumes exactly too)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import HarnessForgeError

REQUESTED = threading.Event()
ASKED = "stopping after the current tool call; run again to resume"


class Stopped(HarnessForgeError):
    """The run stopped on request between two tool calls; nothing is lost, a rerun resumes."""


def check() -> None:
    """Raises Stopped once a stop was requested: called between tool calls and before each model call."""
    if REQUESTED.is_set():
        raise Stopped("stopped on request after a tool call; run the same command again to resume")


@contextmanager
def stop_on_signals(say: Callable[[str], None]) -> Iterator[None]:
    """For the block, SIGINT and SIGTERM ask the run to stop after the current tool call (`say` tells so)."""
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def asked(number, frame) -> None:
        if REQUESTED.is_set() and number == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: at once
        REQUESTED.set()
        say(ASKED)

    for number in previous:
        signal.signal(number, asked)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        REQUESTED.clear()
