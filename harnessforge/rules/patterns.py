"""Rules that hold regular expressions check them when the rules load, naming the bad one."""

from __future__ import annotations

import re


def compiles(patterns: list[str], what: str) -> None:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ValueError(f"{what} {pattern!r} is not a regular expression: {e}") from None
