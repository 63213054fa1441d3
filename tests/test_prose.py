"""Comments and docstrings told from the text alone (`prose`)."""

from __future__ import annotations

import pytest

from atompin.analysis.prose import ProseFinder

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
