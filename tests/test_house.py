"""How the house is built: a pure analysis core, typed data across the lock boundary."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap

import pytest

from atompin import lockfile
from atompin.errors import InputError
from atompin.lockdiff import diff_locks
from atompin.lockfile import Lock, LockedCheck, LockedComponent, LockedPair
from atompin.model import COUNT_FIELDS, Counts, RefKind, Rule, Severity, Verdict


def test_the_analysis_core_imports_no_file_format_git_or_cli():
    """Trees in, findings out: importing the analysis pulls in none of the edges."""
    code = textwrap.dedent(
        """
        import sys, pkgutil, importlib
        import atompin.analysis
        for m in pkgutil.iter_modules(atompin.analysis.__path__):
            importlib.import_module(f"atompin.analysis.{m.name}")
        print(" ".join(sorted(sys.modules)))
        """
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    forbidden = {
        "atompin.manifest",
        "atompin.lockfile",
        "atompin.locking",
        "atompin.relocations",
        "atompin.sources.git",
        "atompin.cli",
        "git",
        "tomlkit",
        "pydantic",
        "typer",
        "rich",
    }
    assert not loaded & forbidden


def test_locked_checks_carry_every_count_the_model_defines():
    assert set(COUNT_FIELDS) <= set(LockedCheck.model_fields)
    check = LockedCheck(consumer="c", provider="p", gate=True, verdict=Verdict.PASS, overrides=2, symbols=5)
    assert check.counts == Counts(symbols=5, overrides=2)


def _lock(overrides: int) -> Lock:
    check = LockedCheck(consumer="c", provider="pv", gate=True, verdict=Verdict.PASS, overrides=overrides)
    component = LockedComponent(repo="r", ref="v1", ref_kind=RefKind.TAG, commit="a" * 40)
    return Lock(
        manifest_hash="x",
        pairs=[LockedPair(name="p", verdict=Verdict.PASS, components={"pv": component}, checks=[check])],
    )


def test_the_lock_diff_shows_a_change_in_overridden_architectures():
    [pair] = diff_locks(_lock(3), _lock(1)).changed
    assert pair.counts == [("c->pv", "overrides", 3, 1)]


def test_the_lock_reads_back_into_types():
    text = lockfile.dumps(_lock(0))
    lock = lockfile.loads(text)
    pair = lock.pairs[0]
    assert pair.verdict is Verdict.PASS and pair.checks[0].verdict is Verdict.PASS
    assert pair.components["pv"].ref_kind is RefKind.TAG
    assert lockfile.dumps(lock) == text


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('verdict = "pass"', 'verdict = "banana"', "pairs[0].verdict"),
        ('ref-kind = "tag"', 'ref-kind = "sideways"', "pairs[0].components.pv.ref-kind"),
    ],
)
def test_a_lock_that_says_what_atompin_never_writes_is_refused(old: str, new: str, where: str):
    text = lockfile.dumps(_lock(0))
    assert old in text
    with pytest.raises(InputError, match=rf"atompin.lock:\d+: {re.escape(where)}: .*regenerate it with `atompin lock`"):
        lockfile.loads(text.replace(old, new, 1))


def test_verdicts_rank_and_enums_print_as_their_word():
    assert Verdict.worst([Verdict.PASS, Verdict.FAIL, Verdict.WARN]) is Verdict.FAIL
    assert Verdict.worst([]) is Verdict.PASS
    assert f"{Severity.ERROR:<7}|" == "error  |" and str(Rule.ARITY_DRIFT) == "arity-drift"
    assert {Verdict.WARN: 1}["warn"] == 1  # hashes as its word: lookups by the written value work


def test_relocation_entries_are_plain_model_data():
    from atompin.model import Relocation
    from atompin.relocations import parse_table

    table = parse_table('package = "pv"\napplies = ">=1"\n[[moved]]\nold = "pv.a:f"\nnew = "pv.b:f"\n', "t.toml")
    assert table.moved == [Relocation(old="pv.a:f", new="pv.b:f")]
    assert dataclasses.is_dataclass(table.moved[0])


def test_checks_run_with_the_cyclic_collector_paused_and_restore_it():
    import gc

    from atompin.analysis.gcpause import without_gc

    seen: list[bool] = []

    @without_gc
    def work(fail: bool) -> None:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError

    assert gc.isenabled()
    work(False)
    with pytest.raises(ValueError):
        work(True)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        work(False)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_a_check_leaves_nothing_for_the_collector_to_free():
    """With the collector paused, what a check leaves in a reference cycle is freed only by the
    collector's next pass after it, which then scans every object the check made: 0.03-0.05 s of
    a lock of ATOM's plugin, when the indexes were held by a closure they held themselves."""
    import gc

    from tests.test_contact import check

    consumer = {
        "plug/patches.py": "import pv.worker\n\ndef install():\n    pv.worker.helper = lambda: 2\n",
        "plug/use.py": "from pv.worker import helper\n\nclass Mine(pv.worker.Base):\n    def run(self):\n        return helper()\n",
    }
    provider = {"pv/worker.py": "class Base:\n    def run(self):\n        return 1\n\ndef helper():\n    return 1\n"}
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        check(consumer, provider, baseline=provider)
        gc.collect()
        left = {type(each).__module__ for each in gc.garbage if type(each).__module__.startswith("atompin.")}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == set()


def test_every_rule_has_a_description_and_sarif_help():
    from atompin.model import RULE_DESCRIPTIONS
    from atompin.report.sarif import _RULE_HELP

    assert set(RULE_DESCRIPTIONS) == set(Rule) and set(_RULE_HELP) == set(Rule)


@pytest.mark.parametrize("format", ["text", "json", "markdown", "sarif"])
def test_a_check_without_tables_loads_no_file_format_library(tmp_path, format):
    """pydantic and tomlkit serve the manifest, the lock and relocation tables: a check of two
    folders reads none of them, so its start-up need not pay for them."""
    (tmp_path / "prov" / "pv").mkdir(parents=True)
    (tmp_path / "prov" / "pv" / "__init__.py").write_text("def f(a):\n    return a\n")
    (tmp_path / "cons" / "cn").mkdir(parents=True)
    (tmp_path / "cons" / "cn" / "__init__.py").write_text("from pv import f\nf(1)\n")
    code = textwrap.dedent(
        f"""
        import atexit, sys
        atexit.register(lambda: print("MODULES", " ".join(sorted(sys.modules)), file=sys.stderr))
        sys.argv = ["atompin", "check", {str(tmp_path / "cons")!r}, {str(tmp_path / "prov")!r},
                    "--package", "pv", "--format", {format!r}, "--no-cache"]
        from atompin.cli import main
        main()
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    loaded = set(run.stderr.split("MODULES", 1)[1].split())
    assert "atompin.analysis.engine" in loaded  # the check did run
    assert not loaded & {"pydantic", "tomlkit", "atompin.relocations", "atompin.lockfile"}
