"""Measure atompin as installed: its modules compiled to bytecode once, before any run.

pip compiles a package's modules when it installs it; an editable install, or an
environment that sets PYTHONDONTWRITEBYTECODE, would otherwise compile all of atompin's
source again in every measured process (0.2 s here, more than some targets).
"""

from __future__ import annotations

import compileall
from pathlib import Path

import atompin


def compile_atompin() -> None:
    """Write the bytecode of every atompin module (nothing when it is up to date)."""
    compileall.compile_dir(Path(atompin.__file__).parent, quiet=1)
