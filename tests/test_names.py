"""Names as strings: packages, symbols, and a name written as a string literal."""

from __future__ import annotations

import pytest

from atompin.analysis.names import absolute_module, in_package, join_symbol, quoted, split_symbol, writes_as_string


def test_in_package_is_by_whole_parts():
    assert in_package("a.b", "a") and in_package("a", "a")
    assert not in_package("ab", "a")


def test_relative_imports_resolve_from_the_module_or_package():
    assert absolute_module("pkg.mod", False, 1, "x") == "pkg.x"
    assert absolute_module("pkg.sub", True, 1, "x") == "pkg.sub.x"
    assert absolute_module("pkg.mod", False, 0, "os") == "os"


def test_symbols_split_and_join():
    assert split_symbol("pkg.mod:Cls.meth") == ("pkg.mod", "Cls.meth")
    assert join_symbol("pkg.mod", ["Cls", "meth"]) == "pkg.mod:Cls.meth"


@pytest.mark.parametrize(
    ("text", "written"),
    [
        (b'getattr(x, "hook")', True),
        (b"getattr(x, 'hook')", True),
        (b"x.hook()", False),
        (b'"hooks"', False),
        (b'"pre_hook"', False),
    ],
)
def test_a_name_written_as_a_string(text, written):
    assert quoted("hook") == (b'"hook"', b"'hook'")
    assert writes_as_string(text, "hook") is written
