"""Review: places ProseReader takes for prose although Python's tokenizer reads code there, and
files names_the_provider_in_code says do not name the provider although code there reaches it."""

from __future__ import annotations

import io
import sys
import tokenize

import pytest

from atompin.analysis.prose import ProseReader
from atompin.analysis.relevant import names_the_provider_in_code

# A backslash-newline inside a one-line string continues it; with CRLF line endings the newline
# is b"\r\n", and the reader's `\\.` eats the "\r" and then ends the string at the "\n".
CRLF_CONTINUATION = b"x = \"\\\r\n'''\"\r\nimport vllm\r\n"
# Old Mac line endings: CPython ends a line (and so a comment) at a lone "\r".
LONE_CR = b"x = 1  # note\rimport vllm\r"
# Python 3.12+ (PEP 701): an f-string's braces may hold a string with its own quote kind.
PEP_701 = b'x = f\'{"""\'"""}\'\nimport vllm\n'


def _tokenizer_says_code(source: bytes) -> bool:
    names = [t.string for t in tokenize.tokenize(io.BytesIO(source).readline) if t.type == tokenize.NAME]
    return "vllm" in names


@pytest.mark.parametrize("source", [CRLF_CONTINUATION, LONE_CR], ids=["crlf-continuation", "lone-cr"])
def test_the_reader_agrees_with_the_tokenizer(source: bytes):
    compile(source, "<review>", "exec")  # valid Python
    assert _tokenizer_says_code(source)
    assert ProseReader(source).at(source.index(b"vllm")) is False


@pytest.mark.parametrize("source", [CRLF_CONTINUATION, LONE_CR], ids=["crlf-continuation", "lone-cr"])
def test_an_import_of_the_provider_names_it(source: bytes):
    assert names_the_provider_in_code(source, "vllm", {"atom.plugin.vllm"}) is True


def test_a_pep_701_f_string_does_not_open_a_docstring():
    if sys.version_info >= (3, 12):
        compile(PEP_701, "<review>", "exec")
        assert _tokenizer_says_code(PEP_701)
    assert ProseReader(PEP_701).at(PEP_701.index(b"vllm")) is False
    assert names_the_provider_in_code(PEP_701, "vllm", {"atom.plugin.vllm"}) is True


def test_an_attribute_of_a_non_ascii_name_is_not_a_consumer_module():
    # `éatom` is a variable, not the consumer package `atom`: its attribute may hold the provider,
    # as `other.pv` does in test_relevant.
    source = "éatom = load()\nengine = éatom.plugin.vllm.LLM\n".encode()
    compile(source, "<review>", "exec")
    assert names_the_provider_in_code(source, "vllm", {"atom.plugin.vllm"}) is True
