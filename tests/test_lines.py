"""Line numbers as the parser and editors count them, wherever atompin names a line: a form feed,
`\\x85` or `\\u2028` in a comment starts no line (`str.splitlines` would start one)."""

from __future__ import annotations

import ast
import bisect

import pytest

from atompin.analysis.pinning import parse_env, read_pyproject, unconstrained_plugin
from atompin.errors import InputError
from atompin.lines import line_numbers, line_starts, text_lines
from atompin.relocations import parse_table
from atompin.report.sarif import pair_lines
from atompin.tomlfile import locate

# Characters `str.splitlines` splits at that end no line for Python, TOML or a shell.
NOT_LINE_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\nb", ["a\n", "b"]),
        ("\n\n", ["\n", "\n"]),
        ("a\r\nb\rc\n", ["a\r\n", "b\r", "c\n"]),
        ("a\x0cb\u2028c\x85d\n", ["a\x0cb\u2028c\x85d\n"]),
    ],
)
def test_text_lines_end_at_lf_crlf_and_a_lone_cr_only(text: str, lines: list[str]):
    assert text_lines(text) == lines
    assert "".join(lines) == text  # nothing lost


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("mark", ["", *NOT_LINE_ENDS])
def test_line_starts_put_every_node_on_the_line_the_parser_says(end: str, mark: str):
    source = end.join(["x = 1", f"# note{mark} more", "def f():", "    return g(2)", "y = f()", ""]).encode()
    starts = line_starts(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call | ast.FunctionDef | ast.Assign):
            line = source[starts[node.lineno - 1] : starts[node.lineno]]
            assert line[node.col_offset :].startswith(ast.unparse(node)[:5].encode())


@pytest.mark.parametrize("mark", NOT_LINE_ENDS[5:])  # those TOML allows in a comment
def test_a_manifest_key_is_located_on_its_line(mark: str):
    text = f'# components{mark} and pairs\n[components.pv]\nrepo = "r"\npackage = 3\n'
    assert locate(text, ("components", "pv", "package")) == 4


@pytest.mark.parametrize("mark", NOT_LINE_ENDS[5:])
def test_a_pair_is_anchored_on_its_name_line_in_sarif(mark: str):
    text = f'# pairs{mark} below\n[[pairs]]\nname = "a"\n\n[[pairs]]\nname = "b"\n'
    assert pair_lines(text) == {"a": 3, "b": 6}


@pytest.mark.parametrize("mark", NOT_LINE_ENDS[5:])
def test_a_bad_relocation_entry_is_reported_on_its_line(mark: str):
    text = f'# moved{mark} in 1.0\npackage = "pv"\napplies = ">=1"\n[[moved]]\nold = "pv.a:f"\nnew = "pv.b"\n'
    with pytest.raises(InputError) as err:
        parse_table(text, "t.toml")
    assert str(err.value).startswith("t.toml:6: moved[0].new:")


@pytest.mark.parametrize("mark", NOT_LINE_ENDS)
def test_a_declared_version_is_read_on_its_line(mark: str):
    text = f"# pins{mark} for the image\nVLLM_VERSION=0.33.0\nVLLM_COMMIT=abc\n"
    assert parse_env(text) == {"VLLM_VERSION": ("0.33.0", 2), "VLLM_COMMIT": ("abc", 3)}


@pytest.mark.parametrize("mark", NOT_LINE_ENDS[5:])
def test_an_unconstrained_plugin_is_cited_on_its_entry_point_line(mark: str):
    pyproject = (
        f'[project]\nname = "plug"\n# plugins{mark} armed below\ndependencies = []\n\n'
        '[project.entry-points."pv.plugins"]\nplug = "plug:register"\n'
    )
    [finding] = unconstrained_plugin("plug", "pv", "pv", [], read_pyproject(pyproject))
    assert [site.line for site in finding.sites] == [6]


@pytest.mark.parametrize("source", [b"a\nb\r\nc\rd\n\ne", b"\r\n\r\n\r\r\n\n", b"", b"x", b"\r", b"a\r\n"])
def test_line_numbers_agree_with_line_starts_at_every_offset_asked_in_any_set(source: bytes):
    starts = line_starts(source)
    expected = {offset: bisect.bisect_right(starts, offset) for offset in range(len(source) + 1)}
    assert line_numbers(source, range(len(source) + 1)) == expected
    # Asked for a few: an offset on the `\n` of a `\r\n`, between the two, each alone.
    for offset in range(len(source) + 1):
        assert line_numbers(source, [offset]) == {offset: expected[offset]}
        assert line_numbers(source, [0, offset]) == {0: 1, offset: expected[offset]}


def test_a_trees_text_drops_a_byte_order_mark_and_replaces_bytes_that_are_not_utf8():
    from atompin.sources.tree import MemoryTree

    tree = MemoryTree({"a.toml": b"\xef\xbb\xbf[project]\nname = 'x\xff'\n", "b.env": b"X=1\n"})
    assert tree.read_text("a.toml") == "[project]\nname = 'x\ufffd'\n"
    assert tree.read_text("b.env") == "X=1\n"
