"""TOML documents (a consumer's `pyproject.toml`) read as plain data by the analysis.

The standard library reads them where it can (Python 3.11+): tomlkit, which atompin needs for the
files it writes (keeping their comments), took 0.03 s to import in every `check`.
"""

from __future__ import annotations

from typing import Any


def read_toml(text: str) -> dict[str, Any] | None:
    """A TOML document as plain data; None when it does not parse."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomlkit
        from tomlkit.exceptions import ParseError

        try:
            return tomlkit.parse(text).unwrap()
        except ParseError:
            return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
