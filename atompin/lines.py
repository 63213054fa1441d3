"""Lines of a file's text, numbered as Python's parser and editors number them.

A line ends at `\n`, `\r\n` or a lone `\r`, nowhere else. `str.splitlines` also splits at a
form feed, `\x1c`-`\x1e`, `\x85` and `\u2028`, which may sit in a comment or a string: every
line number after one would be off by one. Syntax trees, TOML and env files are numbered here.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_LINE_END = re.compile(rb"\r\n|\r|\n")


def text_lines(text: str) -> list[str]:
    """`text`'s lines, each with its end: `text_lines(text)[n - 1]` is line n."""
    return _LINE.findall(text)


def line_starts(source: bytes) -> list[int]:
    """Where each line of `source` starts: `line_starts(source)[node.lineno - 1]`; one more entry
    at the end of the last line ended."""
    return [0, *(m.end() for m in _LINE_END.finditer(source))]
