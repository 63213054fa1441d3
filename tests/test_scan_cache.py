"""The consumer scan is cached by content, helpers outside the scanned package included."""

from __future__ import annotations

from pathlib import Path

from atompin.analysis.cache import SqliteAnalysisCache
from atompin.analysis.engine import scan_consumer
from atompin.sources.tree import FolderTree
from atompin.testing import write_files

FILES = {
    "plug/__init__.py": "",
    "plug/shared.py": "def apply(cls):\n    cls.run = cls.run\n",
    "plug/vl/__init__.py": "",
    "plug/vl/patch.py": "from pv.m import Runner\nfrom plug.shared import apply\napply(Runner)\n",
}


def test_scan_is_cached_and_invalidated_by_a_helper_change(tmp_path: Path, monkeypatch):
    root = write_files(tmp_path / "c", FILES)
    cache = SqliteAnalysisCache(tmp_path / "cache")
    first = scan_consumer(FolderTree(root), ["plug.vl"], "pv", cache)
    assert [(p.attr, str(p.site)) for p in first.patches] == [("run", "plug/shared.py:2")]
    assert set(first.helper_modules) == {"plug.shared"}
    cache.flush()

    import atompin.analysis.engine as engine

    calls = []
    original = engine.ConsumerScanner.scan
    monkeypatch.setattr(engine.ConsumerScanner, "scan", lambda self, *args: calls.append(1) or original(self, *args))
    again = scan_consumer(FolderTree(root), ["plug.vl"], "pv", SqliteAnalysisCache(tmp_path / "cache"))
    assert calls == [] and again == first

    (root / "plug/shared.py").write_text("def apply(cls):\n\n    cls.other = cls.other\n")
    changed = scan_consumer(FolderTree(root), ["plug.vl"], "pv", SqliteAnalysisCache(tmp_path / "cache"))
    assert calls == [1]
    assert [(p.attr, str(p.site)) for p in changed.patches] == [("other", "plug/shared.py:3")]


def test_every_file_is_handed_over_before_the_files_to_scan_are_chosen(tmp_path: Path, monkeypatch):
    """The provider's side starts as soon as the consumer's files are read (a second process then
    indexes what they import while this one chooses the files to scan and scans them): what the
    files import of the provider is what the scanned ones import."""
    import atompin.analysis.engine as engine
    from atompin.analysis.relevant import provider_names

    files = {
        **FILES,
        "plug/vl/unrelated.py": "import json\nVLLM_CONFIG = json.dumps({})\n",  # names no provider module
        "plug/vl/config.py": "from pv.config import Config\n",
    }
    root = write_files(tmp_path / "c", files)
    events: list[str] = []
    handed: list[bytes] = []
    real = engine.relevant_files
    monkeypatch.setattr(engine, "relevant_files", lambda *args: events.append("choose") or real(*args))

    def before_parse(sources: list[bytes]) -> None:
        events.append("handed")
        handed.extend(sources)

    usage = scan_consumer(FolderTree(root), ["plug"], "pv", None, before_parse)
    assert events == ["handed", "choose"]
    assert sorted(handed) == sorted(text.encode() for text in files.values())
    scanned = [text.encode() for path, text in files.items() if path != "plug/vl/unrelated.py"]
    assert provider_names(handed, "pv") == provider_names(scanned, "pv") >= {"pv.m:Runner", "pv.config:Config"}
    assert usage.files == 2  # every file is handed over; the two that import the provider are scanned
