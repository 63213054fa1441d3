"""Whether a place in a source text is prose (a comment or a docstring), from the text alone.

Searches that read names from bytes (`x.name` in files not parsed) must not take a docstring's
"Override Base.name for ..." or a comment for a read. A comment is a `#` before the place on
its line; a docstring is told by the triple quotes before the place: after an odd number of
them the place is inside one. Triple quotes inside a one-line string (`'\"\"\"'`) or on a comment
line are not counted. A place inside a triple-quoted f-string's braces counts as prose: the
searches then find fewer reads, never more.
"""

from __future__ import annotations

import bisect
import re

_TRIPLE = re.compile(rb"\"\"\"|'''")


class ProseFinder:
    """Answers `at(position)` for one text (its triple quotes found once, when first asked)."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self._quotes: dict[bytes, list[int]] | None = None

    def at(self, position: int) -> bool:
        """Is `position` in a comment or a docstring?"""
        text = self.text
        if b"#" in text[text.rfind(b"\n", 0, position) + 1 : position]:
            return True
        if self._quotes is None:
            self._quotes = _triple_quotes(text)
        return any(bisect.bisect_left(found, position) % 2 == 1 for found in self._quotes.values())


def _triple_quotes(text: bytes) -> dict[bytes, list[int]]:
    """Where each kind of triple quote opens or closes a string, in order."""
    out: dict[bytes, list[int]] = {b'"""': [], b"'''": []}
    for match in _TRIPLE.finditer(text):
        at = match.start()
        if at and text[at - 1 : at] in (b'"', b"'"):
            continue  # inside a one-line string ('"""'), or the tail of a longer run of quotes
        if text[text.rfind(b"\n", 0, at) + 1 : at].lstrip().startswith(b"#"):
            continue  # on a comment line
        kind = match.group()
        opened = next((k for k, found in out.items() if len(found) % 2), None)
        if opened is not None and opened != kind:
            continue  # the other kind of triple quote, inside an open triple-quoted string
        out[kind].append(at)
    return out
