"""Whether a place in a source text is prose (a comment or a docstring), from the text alone.

Searches that read names from bytes (`x.name` in files not parsed) must not take a docstring's
"Override Base.name for ..." or a comment for a read. `ProseFinder` tells them from the place's
line and the triple quotes before it. A comment is a `#` before the place on its line that is
in no one-line string. A docstring: the triple quotes are paired in order, an open string
closing at the first unescaped triple quote of its kind, as Python reads it; a triple quote in
a comment or in a one-line string (`'\"\"\"'`) opens none. A place inside a triple-quoted
f-string counts as prose (its braces hold code): the searches then find fewer reads, never
more. On vLLM, ATOM and the plugins checked, that is the only place it differs from
`ProseReader`.

`ProseReader` answers the same question exactly, for the choice of files to scan, where a
place wrongly taken for prose could leave a file unread: it reads the text's comments and
strings in order, as Python's tokenizer does, and a triple-quoted f-string is not prose there.
It is slower, so it reads only as far as it is asked.
"""

from __future__ import annotations

import bisect
import re

_TRIPLE = re.compile(rb"\"\"\"|'''")
# What opens a comment or a string (with its prefix: `f`, `rb`, `t`...), and what ends each kind
# of string from just after its opening quote (a backslash escapes any character, a line's end
# too, in raw strings as well; a one-line string ends at its line's end when unterminated, any
# string at the text's end). Lines end at "\n", "\r\n" or a lone "\r", as CPython reads them.
# A string's prefix is the one or two of those letters just before its quote, when no other
# letter, digit or underscore comes before them (`xf"` is a name, then a plain string); the
# quote is found first (a search for one of three bytes is fast), the prefix read back from it.
_OPENING = re.compile(rb"[#\"']")
_PREFIX = frozenset(b"rRbBuUfFtT")
# The bytes of a word (`\w` on bytes), as ints.
WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_ESCAPE = rb"\\(?:\r\n|.|\Z)"  # a backslash ending the text escapes nothing, and ends the string
_CLOSING = {
    b'"': re.compile(rb'(?:[^"\\\r\n]|' + _ESCAPE + rb')*(?:"|[\r\n]|\Z)', re.S),
    b"'": re.compile(rb"(?:[^'\\\r\n]|" + _ESCAPE + rb")*(?:'|[\r\n]|\Z)", re.S),
    b'"""': re.compile(rb'(?:[^"\\]|' + _ESCAPE + rb'|"(?!""))*(?:"""|\Z)', re.S),
    b"'''": re.compile(rb"(?:[^'\\]|" + _ESCAPE + rb"|'(?!''))*(?:'''|\Z)", re.S),
}
_LINE_END = re.compile(rb"[\r\n]")


class ProseFinder:
    """Answers `at(position)` for one text (its triple quotes found once, when first asked)."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self._lines = _LineCode(text)
        self._quotes: dict[bytes, list[int]] | None = None

    def at(self, position: int) -> bool:
        """Is `position` in a comment or a docstring?"""
        if self._lines.in_comment(position):
            return True
        if self._quotes is None:
            self._quotes = _triple_quotes(self.text, self._lines)
        return any(bisect.bisect_left(found, position) % 2 == 1 for found in self._quotes.values())

    def in_code(self, position: int) -> bool:
        """Is `position` in code: in no comment, docstring or one-line string (a name written in
        a log message is no use of it)?"""
        return not self.at(position) and not self._lines.in_string(position)


# A longer line (data, or hostile input) is read as code alone: its strings and comment are not
# looked for, so that no text costs more than a few passes over it.
_LONGEST_LINE = 8192


class _LineCode:
    """Where a text's lines hold one-line strings and a comment, read once per line when asked."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self._read: dict[int, tuple[list[int], list[int], int]] = {}  # line start -> string starts, ends; `#`

    def in_comment(self, position: int) -> bool:
        """Does a comment's `#` come before `position` on its line (not a `#` in a string)?"""
        start = self._start(position)
        if start is None or self.text.find(b"#", start, position) < 0:
            return False  # most lines: no `#` before the place, nothing to read
        return self._line(start)[2] < position

    def in_string(self, position: int) -> bool:
        """Is `position` inside a one-line string opened earlier on its line?"""
        text, start = self.text, self._start(position)
        if start is None or (text.find(b'"', start, position) < 0 and text.find(b"'", start, position) < 0):
            return False
        starts, ends, _ = self._line(start)
        i = bisect.bisect_left(starts, position) - 1
        return i >= 0 and position < ends[i]

    def _start(self, position: int) -> int | None:
        """Where the line of `position` starts; None for a longer line."""
        text = self.text
        lowest = max(0, position - _LONGEST_LINE)
        start = max(text.rfind(b"\n", lowest, position), text.rfind(b"\r", lowest, position)) + 1
        return None if start == 0 and lowest > 0 else start

    def _line(self, start: int) -> tuple[list[int], list[int], int]:
        """The line's one-line strings (as `ProseReader` reads them: a triple quote is an empty
        string and an opening here) and where its comment starts (the text's end: none)."""
        found = self._read.get(start)
        if found is None:
            text = self.text
            starts: list[int] = []
            ends: list[int] = []
            comment = len(text)
            end = min(len(text), start + _LONGEST_LINE)
            opening = _OPENING.search(text, start, end)
            while opening is not None:
                at = opening.start()
                if text[at] == 35:  # "#"
                    comment = at
                    break
                closing = _CLOSING[text[at : at + 1]].match(text, at + 1)
                assert closing is not None  # every pattern matches the empty tail
                starts.append(at)
                ends.append(closing.end())
                opening = _OPENING.search(text, closing.end(), end)
            found = self._read[start] = (starts, ends, comment)
        return found


def _escaped(text: bytes, at: int) -> bool:
    """Is the byte at `at` escaped (by an odd run of backslashes before it)?"""
    run = at
    while run and text[run - 1] == 92:  # a backslash
        run -= 1
    return (at - run) % 2 == 1


def _triple_quotes(text: bytes, lines: _LineCode) -> dict[bytes, list[int]]:
    """Where each kind of triple quote opens or closes a string, in order. An open string closes
    at the first triple quote of its kind that is not escaped, as Python reads it (`'word'\"\"\"`
    closes a docstring). What opens one is a guess from its line: not a triple quote in a
    comment, nor one in a one-line string (`'\"\"\"'`, `r'(\"\"\"|x)'`), nor one right after a
    quote (the tail of a run of quotes)."""
    out: dict[bytes, list[int]] = {b'"""': [], b"'''": []}
    opened: bytes | None = None
    for match in _TRIPLE.finditer(text):
        at, kind = match.start(), match.group()
        if opened is not None:
            if kind == opened and not _escaped(text, at):
                out[kind].append(at)
                opened = None
            continue  # the other kind, or an escaped one, inside the open string
        if at and text[at - 1] in b"\"'" or _escaped(text, at) or lines.in_comment(at) or lines.in_string(at):
            continue
        out[kind].append(at)
        opened = kind
    return out


class ProseReader:
    """Answers `at(position)` for one text exactly: is the place in a comment, or in a
    triple-quoted string that is not an f-string (whose braces may hold code)? And `in_comment`:
    in a comment? The comments and strings are read in order from the start, only as far as the
    places asked need."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self._read_to = 0  # every comment and string that starts before this is read
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._prose: list[bool] = []
        self._comment: list[bool] = []

    def at(self, position: int) -> bool:
        """Is `position` in a comment or a triple-quoted string other than an f-string?"""
        i = self._around(position)
        return i is not None and self._prose[i]

    def in_comment(self, position: int) -> bool:
        """Is `position` in a comment (a `#` in a string opens none)?"""
        i = self._around(position)
        return i is not None and self._comment[i]

    def _around(self, position: int) -> int | None:
        """The comment or string `position` is in, by its order in the text; None: in neither."""
        while self._read_to <= position:
            self._read_next()
        i = bisect.bisect_right(self._starts, position) - 1
        return i if i >= 0 and position < self._ends[i] else None

    def _read_next(self) -> None:
        text = self.text
        found = _OPENING.search(text, self._read_to)
        if found is None:
            self._read_to = len(text) + 1
            return
        start = found.start()
        quote: bytes | None = None
        if text[start] == 35:  # "#": a comment, to its line's end
            line_end = _LINE_END.search(text, start)
            end, prose = (len(text) if line_end is None else line_end.start()), True
        else:
            quote = text[start : start + 3]
            if quote != b'"""' and quote != b"'''":
                quote = quote[:1]
            body = start + len(quote)
            prefix = text[start - _prefix_length(text, start) : start].lower()
            start -= len(prefix)
            closing = _CLOSING[quote].match(text, body)
            assert closing is not None  # every pattern matches the empty tail
            end = closing.end()
            code_inside = b"f" in prefix or b"t" in prefix  # f- and t-strings: their braces are code
            prose = len(quote) == 3 and not code_inside
            if code_inside and _unclosed_brace(text[body:end]):
                # A brace left open: a string of the same quote inside it (Python 3.12's f-strings)
                # ended it early here. Where it really ends is not read: nothing after is prose.
                end = len(text)
        self._starts.append(start)
        self._ends.append(end)
        self._prose.append(prose)
        self._comment.append(quote is None)
        self._read_to = max(end, start + 1)


def _prefix_length(text: bytes, quote: int) -> int:
    """How many letters before the quote at `quote` are the string's prefix (0, 1 or 2)."""
    for length in (2, 1):
        first = quote - length
        if (
            first >= 0
            and all(c in _PREFIX for c in text[first:quote])
            and (first == 0 or text[first - 1] not in WORD_BYTES)
        ):
            return length
    return 0


def _unclosed_brace(body: bytes) -> bool:
    """Does an f-string's body, as read, leave a replacement field open? Outside a field `{{` and
    `}}` are literal braces; inside one, braces nest (`{x:<{width}}`) and a string's are its own
    (`{'{' if a else b}`)."""
    depth = i = 0
    while i < len(body):
        brace = body[i : i + 1]
        if depth == 0 and brace in (b"{", b"}") and body[i + 1 : i + 2] == brace:
            i += 2  # a literal brace
            continue
        if depth and brace in (b"'", b'"'):  # a string inside a field: its braces are its own
            close = body.find(brace, i + 1)
            if close < 0:
                return True
            i = close + 1
            continue
        if brace == b"{":
            depth += 1
        elif brace == b"}" and depth:
            depth -= 1
        i += 1
    return depth > 0
