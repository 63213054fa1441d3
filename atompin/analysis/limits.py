"""Per-file limits of the parsers: hostile but valid Python means "unknown" for that file
(the `unparseable` warning), never a crash and never a run that does not end.

Two bounds, both cheap: a file over `MAX_FILE_BYTES` is not parsed at all (the size
bounds the time and memory one file can take; real code sits far below it: the largest
file across vLLM 0.33 and 15 released plugins is 320 KB), and a file nested so deeply
that parsing it, or a visitor walking it, runs out of recursion is unknown from there on
(`RecursionError` is caught per file by the indexer and per body by the scanner: real code
nests at most 48 levels, far from Python's limit). Counting nodes up front would cost more
than the parse itself.
"""

from __future__ import annotations

import ast

MAX_FILE_BYTES = 4 * 1024 * 1024
TOO_DEEP = "nested too deeply to analyse (Python's recursion limit)"


def parse_limited(source: bytes | str) -> ast.Module:
    """`ast.parse` within the limits; a `SyntaxError` saying which limit when a file is over one."""
    size = len(source.encode() if isinstance(source, str) else source)
    if size > MAX_FILE_BYTES:
        raise SyntaxError(f"{size} bytes, over atompin's per-file limit of {MAX_FILE_BYTES} bytes")
    try:
        return ast.parse(source)
    except RecursionError:
        raise SyntaxError(TOO_DEEP) from None
    except MemoryError:
        raise SyntaxError("too large to parse in memory") from None


def parse_expression(text: str) -> ast.expr | None:
    """A string annotation (`"Cls | None"`) as an expression; None when it is not one, or is hostile."""
    if len(text) > 10_000:
        return None
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
