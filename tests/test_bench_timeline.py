"""bench/timeline.py times the phases atompin has, and prints one row per phase and process."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from atompin.testing import write_files

TIMELINE = Path(__file__).resolve().parent.parent / "bench" / "timeline.py"


def _phases() -> list[tuple[str, str, str, str]]:
    spec = importlib.util.spec_from_file_location("timeline", TIMELINE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PHASES


def test_every_timed_phase_is_a_function_atompin_has():
    for module_name, owner_name, name, _ in _phases():
        owner = importlib.import_module(module_name)
        owner = getattr(owner, owner_name) if owner_name else owner
        assert callable(getattr(owner, name, None)), f"{module_name}:{owner_name}.{name}"


def test_the_timeline_of_a_small_check(tmp_path: Path):
    provider = write_files(tmp_path / "p", {"pv/__init__.py": "", "pv/ops.py": "def conv(x, w):\n    return x\n"})
    consumer = write_files(tmp_path / "c", {"plug/__init__.py": "", "plug/mod.py": "from pv.ops import conv, gone\n"})
    run = subprocess.run(
        [sys.executable, str(TIMELINE), str(provider), str(consumer), "--package", "pv", "--consumer-package", "plug"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = run.stdout.splitlines()
    assert rows[0].split() == ["process", "start", "end", "time", "runs", "phase"]
    assert any(row.startswith("main") and row.endswith("the whole check") for row in rows)
    assert any(row.endswith("scanning the chosen files") for row in rows)
    assert rows[-1].startswith("wall ") and rows[-1].endswith("findings: 1")  # `gone` is not there
