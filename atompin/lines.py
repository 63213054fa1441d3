"""Lines of a file's text, numbered as Python's parser and editors number them.

A line ends at `\n`, `\r\n` or a lone `\r`, nowhere else. `str.splitlines` also splits at a
form feed, `\x1c`-`\x1e`, `\x85` and `\u2028`, which may sit in a comment or a string: every
line number after one would be off by one. Syntax trees, TOML and env files are numbered here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_LINE_END = re.compile(rb"\r\n|\r|\n")


def text_lines(text: str) -> list[str]:
    """`text`'s lines, each with its end: `text_lines(text)[n - 1]` is line n."""
    return _LINE.findall(text)


def line_starts(source: bytes) -> list[int]:
    """Where each line of `source` starts: `line_starts(source)[node.lineno - 1]`; one more entry
    at the end of the last line ended."""
    return [0, *(m.end() for m in _LINE_END.finditer(source))]


def line_numbers(source: bytes, offsets: Iterable[int]) -> dict[int, int]:
    """The line (1-based) of each byte offset in `source`, lines ended as `line_starts` ends them:
    counted once through the text, from each offset to the next, not from the top for each."""
    out: dict[int, int] = {}
    line = 1
    last = 0
    for offset in sorted(set(offsets)):
        # A `\r` whose `\n` is at `offset` ends its line there: counted with that `\n`, next time.
        ends = source.count(b"\n", last, offset) + source.count(b"\r", last, offset)
        line += ends - source.count(b"\r\n", last, offset + 1)
        out[offset] = line
        last = offset
    return out
