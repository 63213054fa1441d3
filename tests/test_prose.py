"""Comments and docstrings told from the text alone (`prose`)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

import atompin
from atompin.analysis.prose import ProseFinder, ProseReader

TEXT = b'''QUOTE = '"""'
# strip """ from the prompt
def f(x):
    """Override Base.hook for this device."""
    return x.hook()  # calls x.hook
S = """
x.hook
"""
y.hook()
'''


@pytest.mark.parametrize(
    ("needle", "nth", "prose"),
    [
        (b"Base.hook", 0, True),  # a docstring
        (b"x.hook()", 0, False),  # code after the docstring closed
        (b"x.hook\n", 0, True),  # after a `#` on its line
        (b"x.hook\n", 1, True),  # inside a triple-quoted string
        (b"y.hook", 0, False),  # after it closed
    ],
)
def test_prose(needle, nth, prose):
    at = -1
    for _ in range(nth + 1):
        at = TEXT.find(needle, at + 1)
    assert at >= 0
    assert ProseFinder(TEXT).at(at) is prose


def test_the_other_kind_of_triple_quote_inside_a_docstring_opens_nothing():
    text = b"\"\"\"Write ''' in examples.\"\"\"\nx = obj.name\n'''doc'''\ny = obj.name\n"
    finder = ProseFinder(text)
    assert not finder.at(text.index(b"obj.name")) and not finder.at(text.rindex(b"obj.name"))
    assert finder.at(text.index(b"examples")) and finder.at(text.index(b"doc"))


# vLLM 0.33's models/interfaces.py: a docstring whose last word is quoted closes right after
# the quote (`'layers_block_type'"""`); taken for a one-line string's triple quote, every later
# line of the file read as its opposite (code as prose, docstrings as code). ATOM's
# graph_marker_instrumentation.py: a triple quote in a one-line string opened a docstring.
CLOSED_AFTER_A_QUOTE = b"""class A:
    \"\"\"indicates that hf_config has 'layers_block_type'\"\"\"

    is_hybrid = True
    \"\"\"A flag for x.in_docstring.\"\"\"

    def f(self):
        self.expert_weights = []
        # a \"\"\" in a comment after code opens nothing: self.in_comment
        y = 1  # nor after code on its line \"\"\"
        TAG = "#"; self.after_hash_in_string
        m = re.match(r'^(?P<quote>\"\"\"|x)', s); self.after_a_pattern
        \"\"\"Escaped \\\"\"\" does not close: self.still_docstring\"\"\"
        return self.code_at_the_end
"""


@pytest.mark.parametrize(
    ("needle", "prose"),
    [
        (b"x.in_docstring", True),
        (b"self.expert_weights", False),
        (b"self.in_comment", True),
        (b"self.after_hash_in_string", False),
        (b"self.after_a_pattern", False),  # ATOM's shape: a triple quote in a one-line raw string
        (b"self.still_docstring", True),
        (b"self.code_at_the_end", False),
    ],
)
def test_the_finder_closes_a_docstring_at_its_first_triple_quote(needle: bytes, prose: bool):
    at = CLOSED_AFTER_A_QUOTE.index(needle)
    assert ProseReader(CLOSED_AFTER_A_QUOTE).at(at) is prose  # the exact answer
    assert ProseFinder(CLOSED_AFTER_A_QUOTE).at(at) is prose


# Where ProseFinder's shortcuts guess and ProseReader reads: a `#` in a string, a triple quote
# after a comment's `#` or inside a one-line string, an f-string's braces, escapes, raw strings.
HARD = b'''TAG = "#"; import pv.core
x = 1  # a """ in a comment opens nothing
QUOTED = "a\\"\\"\\" b"; RAW = r'\\''
def f():
    r"""Raw docstring \\""" still open: pv.in_docstring"""
    return f"""{pv.in_braces}"""
B = rb\'\'\'pv.in_bytes\'\'\'
pv.after_all
'''


@pytest.mark.parametrize(
    ("needle", "prose"),
    [
        (b"import pv.core", False),  # after a `#` that is in a string
        (b'a """ in', True),  # a comment
        (b"pv.in_docstring", True),  # an escaped triple quote does not close the docstring
        (b"pv.in_braces", False),  # a triple-quoted f-string's braces hold code
        (b"pv.in_bytes", True),
        (b"pv.after_all", False),
    ],
)
def test_the_reader_tells_prose_exactly(needle: bytes, prose: bool):
    assert ProseReader(HARD).at(HARD.index(needle)) is prose


def test_the_reader_agrees_with_pythons_tokenizer_on_this_projects_sources():
    # Every comment and every triple-quoted string but an f-string is prose, from its first
    # byte to its last; every other token is not. Asked in any order.
    root = Path(atompin.__file__).parent
    checked = 0
    for path in sorted(root.rglob("*.py")) + sorted(Path(__file__).parent.glob("test_*.py"))[:20]:
        source = path.read_bytes()
        starts = [0]
        for line in source.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        reader = ProseReader(source)
        expected = []
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type in (tokenize.ENCODING, tokenize.ENDMARKER, tokenize.NEWLINE, tokenize.NL):
                continue
            if token.type in (tokenize.INDENT, tokenize.DEDENT) or not token.string:
                continue
            begin = starts[token.start[0] - 1] + len(token.line[: token.start[1]].encode())
            head = token.string.lstrip("rRbBuU")
            prose = token.type == tokenize.COMMENT or (token.type == tokenize.STRING and head[:3] in ('"""', "'''"))
            end = begin + len(token.string.encode()) - 1
            expected += [(begin, prose), (end, prose)]
        for position, prose in expected:  # in order: read as far as asked
            assert reader.at(position) is prose, (path.name, position)
        backwards = ProseReader(source)
        assert [backwards.at(position) for position, _ in reversed(expected)] == [p for _, p in reversed(expected)]
        checked += len(expected)
    assert checked > 10_000


def test_the_finder_agrees_with_the_reader_on_this_projects_sources():
    # The finder's guesses differ from the reader only in triple-quoted f-strings, which this
    # project's code does not write: at every `.name` they agree (12 places did not before).
    checked = 0
    for path in sorted(Path(atompin.__file__).parent.rglob("*.py")):
        source = path.read_bytes()
        finder, reader = ProseFinder(source), ProseReader(source)
        for match in re.finditer(rb"\.[A-Za-z_]", source):
            assert finder.at(match.start()) is reader.at(match.start()), (path.name, match.start())
            checked += 1
    assert checked > 10_000


@pytest.mark.parametrize(
    "source",
    [
        b'x = f"{a:<{width}}"\n"""doc pv"""\n',  # a format spec's nested field
        b"x = f\"{'{' if a else b}\"\n'''doc pv'''\n",  # a brace inside a string inside a field
        b'x = f"{{literal"\n"""doc pv"""\n',  # a literal brace
    ],
)
def test_an_f_string_whose_fields_close_leaves_later_docstrings_prose(source: bytes):
    assert ProseReader(source).at(source.index(b"pv"))


def test_a_t_string_is_code_and_an_f_string_left_open_makes_nothing_after_it_prose():
    assert not ProseReader(b"x = t'''{pv}'''\n").at(8)
    # Python 3.12 reads `'"""'` inside the field and the f-string goes on; read as 3.11 reads it,
    # its field is left open, so nothing after it is taken for prose.
    source = b'x = f\'{"""\'"""}\'\n"""doc"""\nimport pv\n'
    reader = ProseReader(source)
    assert not reader.at(source.index(b"doc")) and not reader.at(source.index(b"pv"))


def test_the_reader_tells_comments_apart_from_strings_that_hold_a_hash():
    source = b"s = '''\n# text of a string\n'''\nx = \"#\"  # a comment\n"
    reader = ProseReader(source)
    assert not reader.in_comment(source.index(b"text of"))  # inside a string spanning lines
    assert not reader.in_comment(source.index(b'#"'))
    assert reader.in_comment(source.index(b"a comment"))
    assert reader.at(source.index(b"text of")) and not reader.in_comment(source.index(b"s ="))


@pytest.mark.parametrize(
    ("source", "needle", "prose"),
    [
        (b'x = f"""{pv.a}"""', b"pv.a", False),  # a one-letter prefix
        (b'x = Rb"""pv.a"""', b"pv.a", True),  # two letters, either case
        (b'x = fR"""{pv.a}"""', b"pv.a", False),
        (b'x = elf"""pv.a"""', b"pv.a", True),  # `elf` is a name: the string is plain
        (b'x = _f"""pv.a"""', b"pv.a", True),
        (b'x = 2f"""pv.a"""', b"pv.a", True),
        (b'f"""{pv.a}"""', b"pv.a", False),  # a prefix at the text's start
        (b'x=(t"""{pv.a}""")', b"pv.a", False),
    ],
)
def test_a_strings_prefix_is_the_letters_just_before_its_quote_after_no_word(
    source: bytes, needle: bytes, prose: bool
) -> None:
    assert ProseReader(source).at(source.index(needle)) is prose


@pytest.mark.parametrize("source", [b'x = "a\\', b"x = '''a\\", b'x = f"{a}\\', b"\\"])
def test_a_backslash_ending_the_text_inside_a_string_ends_it_there(source: bytes) -> None:
    reader = ProseReader(source)
    assert reader.at(len(source) - 1) is source.startswith(b"x = '''")
    assert not reader.in_comment(len(source) - 1)


def test_a_line_longer_than_the_finder_reads_is_code_and_long_runs_of_quotes_are_read_once():
    # Data, or hostile input: the finder looks for no string or comment on a line over 8 KiB
    # (each question would read the whole line again), and a run of quotes is read as it goes.
    long_line = b'x = "' + b"a" * 9000 + b' y.name"\n'
    assert not ProseFinder(long_line).at(long_line.index(b"y.name"))
    assert ProseReader(long_line).at(long_line.index(b"y.name")) is False  # a one-line string: no prose
    # Valid Python, as the parser reads it: 50,000 empty strings, then 100,000 one-line strings
    # that hold a triple quote; the code after each line is code.
    quotes = b'""""""' * 50_000 + b"\nz.name\nx = " + b'\'a"""\' ' * 100_000 + b"\nw.name\n"
    finder = ProseFinder(quotes)
    assert [finder.at(m.start()) for m in re.finditer(rb"\.name", quotes)] == [False, False]
