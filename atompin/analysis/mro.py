"""C3 linearization: the order in which Python looks up inherited members."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def c3_linearize(start: T, bases_of: Callable[[T], list[T]]) -> list[T]:
    """The method resolution order of `start`.

    `bases_of` gives the direct bases in declaration order. When the hierarchy
    has no consistent C3 order (Python would refuse the class) or is cyclic,
    fall back to a depth-first, duplicate-free order so lookups still work.
    """
    try:
        return _c3(start, bases_of, ())
    except _Inconsistent:
        return _depth_first(start, bases_of)


class _Inconsistent(Exception):
    pass


def _c3(node: T, bases_of: Callable[[T], list[T]], stack: tuple[T, ...]) -> list[T]:
    if node in stack:
        raise _Inconsistent
    bases = bases_of(node)
    sequences = [_c3(b, bases_of, (*stack, node)) for b in bases] + [list(bases)]
    result = [node]
    sequences = [s for s in sequences if s]
    while sequences:
        for seq in sequences:
            head = seq[0]
            if not any(head in other[1:] for other in sequences):
                break
        else:
            raise _Inconsistent
        result.append(head)
        sequences = [[x for x in s if x != head] for s in sequences]
        sequences = [s for s in sequences if s]
    return result


def _depth_first(start: T, bases_of: Callable[[T], list[T]]) -> list[T]:
    seen: dict[T, None] = {}
    todo = [start]
    while todo:
        node = todo.pop(0)
        if node in seen:
            continue
        seen[node] = None
        todo = bases_of(node) + todo
    return list(seen)
