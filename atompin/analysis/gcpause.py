"""Bulk parsing without the cyclic garbage collector.

Parsing allocates millions of small AST objects that are freed by reference
counting; the collector's generational scans over the growing heap find
nothing to free and, measured on a whole plugin package, cost more than the
parsing itself. A pause around a whole check (re-entrant, always restored)
keeps that time for work.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def without_gc(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` with the cyclic collector paused (as it was before, afterwards)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper
