"""What a repository URL or a git ref may look like before atompin hands it to git.

One place for the rules the manifest validates and the git source enforces:
refs that start with `-` (read as options) and transports that run commands
(`ext::`, `fd::`) are refused.
"""

from __future__ import annotations

import re

# `<transport>::<address>` runs a remote helper; ext:: and fd:: run commands or use fds.
_HELPER_SYNTAX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
URL_SCHEMES = ("https://", "http://", "ssh://", "git://", "file://")
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:[^/]")
# A full or abbreviated commit id.
HEX = re.compile(r"^[0-9a-f]{7,40}$")


def short_ref(ref: str) -> str:
    """A full commit id as its first 12 digits (how people and messages name one); any other ref
    as it is."""
    return ref[:12] if len(ref) == 40 and HEX.match(ref) else ref


def check_url(url: str) -> str | None:
    """None when `url` is acceptable, else why not (one line)."""
    if not url or url != url.strip() or _has_control(url):
        return "empty, surrounded by whitespace, or contains control characters"
    if url.startswith("-"):
        return "starts with '-' (it would be read as an option)"
    if _HELPER_SYNTAX.match(url):
        return f"the '{url.split('::')[0]}::' transport runs commands; use https, ssh, git, file or a local path"
    if "://" in url and not url.startswith(URL_SCHEMES):
        return f"unsupported scheme {url.split('://')[0]!r}; use https, ssh, git, file or a local path"
    return None


def check_ref(ref: str) -> str | None:
    """None when `ref` is acceptable, else why not (one line)."""
    if not ref or ref != ref.strip():
        return "empty or surrounded by whitespace"
    if ref.startswith("-"):
        return "starts with '-' (it would be read as an option)"
    if _has_control(ref) or any(c in ref for c in " ~^:?*[\\") or ".." in ref or "@{" in ref:
        return "is not a valid git ref name"
    if ref == "@" or ref.endswith((".lock", "/", ".")) or "//" in ref or "/." in ref or ref.startswith(("/", ".")):
        return "is not a valid git ref name"
    return None


def _has_control(text: str) -> bool:
    # git refuses ASCII control characters in ref names; in a URL they only smuggle lines.
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def is_local(url: str) -> bool:
    """A path (or file:// URL) on this machine rather than a network address."""
    return not url.startswith(URL_SCHEMES) and not _SCP_LIKE.match(url)
