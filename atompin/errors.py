"""Errors that end a command with a documented exit status and one clear line."""

from __future__ import annotations


class AtompinError(Exception):
    """Base: `str(err)` is the one line shown to the user."""

    exit_code = 2


class InputError(AtompinError):
    """Bad input: a missing folder, an unknown package, a malformed file. Exit 2."""

    exit_code = 2


class SourceError(AtompinError):
    """Git or network failure. Exit 3; nothing is written."""

    exit_code = 3


class StaleLockError(AtompinError):
    """The lock no longer matches pairs.toml or the relocation tables. Exit 1, like `verify`."""

    exit_code = 1
