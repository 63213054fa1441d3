"""Accepted findings: declared per check edge in pairs.toml, kept in the lock and every report
marked accepted, failing no gate; stale, expired and out-of-range acceptances."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atompin import lockfile
from atompin.acceptance import accept
from atompin.cli import app
from atompin.errors import InputError
from atompin.manifest import parse_manifest
from atompin.model import Finding, Rule, Severity, Site
from atompin.report import render_lock

runner = CliRunner()
BAD = "miniplug-0.1.0+minivllm-0.33"

# Every error of the demo's failing pair, judged and accepted.
ACCEPT = """
[[checks.accept]]
rule = "unresolved-import"
symbol = "minivllm.v1.core.kv_cache_utils:may_override_num_blocks"
reason = "only the v0 path imports it; tracked in issue 42"

[[checks.accept]]
rule = "missing-patch-target"
symbol = "minivllm.v1.core.kv_cache_utils:*"
reason = "the KV patches moved with vLLM; ported in the next release"
provider = ">=0.33"

[[checks.accept]]
rule = "arity-drift"
symbol = "minivllm.v1.core.kv_cache_planning:_pool_bytes_per_block"
reason = "pool.py is rewritten in the next release"
until = 2099-12-31

[[checks.accept]]
rule = "override-drift"
symbol = "miniplug.prefill:*"
reason = "the prefill backend takes out= in the next release"
"""


def with_acceptances(project: Path, block: str = ACCEPT) -> None:
    text = project.read_text()
    head, sep, rest = text.partition("[[pairs]]")
    project.write_text(head.rstrip() + "\n" + block + "\n" + sep + rest)


def test_accepted_findings_stay_in_the_lock_and_fail_no_gate(demo_project: Path):
    with_acceptances(demo_project)
    result = runner.invoke(app, ["lock", "--manifest", str(demo_project)])
    assert result.exit_code == 0, result.output
    lock = lockfile.read(demo_project.parent / "atompin.lock")
    bad = lock.pair(BAD)
    assert bad is not None and bad.verdict.value == "warn"  # declared-target-skew is still a warning
    errors = [f for f in bad.findings if f.severity is Severity.ERROR]
    assert len(errors) == 5 and all(f.accepted for f in errors)
    assert 'accepted = "pool.py is rewritten in the next release"' in (demo_project.parent / "atompin.lock").read_text()
    assert runner.invoke(app, ["verify", "--manifest", str(demo_project)]).exit_code == 0
    # Every report marks them, with the reason.
    text = render_lock(lock, "text")
    assert "[accepted]" in text and "accepted in pairs.toml: only the v0 path imports it" in text
    assert "error (accepted)" in render_lock(lock, "markdown")
    sarif = json.loads(render_lock(lock, "sarif"))
    suppressed = [r for r in sarif["runs"][0]["results"] if "suppressions" in r]
    assert len(suppressed) == 5
    assert suppressed[0]["suppressions"][0]["kind"] == "external"
    assert {s["suppressions"][0]["justification"] for s in suppressed} >= {"pool.py is rewritten in the next release"}
    data = json.loads(render_lock(lock, "json"))
    [bad_json] = [p for p in data["pairs"] if p["name"] == BAD]
    assert all(f["accepted"] for f in bad_json["findings"] if f["severity"] == "error")


def test_a_stale_acceptance_is_reported(demo_project: Path):
    stale = ACCEPT + '\n[[checks.accept]]\nrule = "unresolved-import"\nsymbol = "minivllm.gone:*"\nreason = "fixed"\n'
    with_acceptances(demo_project, stale)
    runner.invoke(app, ["lock", "--manifest", str(demo_project)])
    pair = lockfile.read(demo_project.parent / "atompin.lock").pair(BAD)
    assert pair is not None
    [finding] = [f for f in pair.findings if f.rule is Rule.STALE_ACCEPTANCE]
    assert finding.severity is Severity.WARNING and finding.symbol == "unresolved-import minivllm.gone:*"
    assert "and there are none: remove the acceptance" in finding.message


def test_expired_or_out_of_range_acceptances_count_again(demo_project: Path):
    expired = ACCEPT.replace("until = 2099-12-31", "until = 2001-01-01").replace(
        'provider = ">=0.33"', 'provider = "<0.33"'
    )
    with_acceptances(demo_project, expired)
    result = runner.invoke(app, ["lock", "--manifest", str(demo_project)])
    assert result.exit_code == 1
    pair = lockfile.read(demo_project.parent / "atompin.lock").pair(BAD)
    assert pair is not None
    still = {f.rule.value for f in pair.findings if f.severity is Severity.ERROR and not f.accepted}
    assert still == {"arity-drift", "missing-patch-target"}
    # Out of their range or past their date they are inactive, not stale.
    assert not any(f.rule is Rule.STALE_ACCEPTANCE for f in pair.findings)


def test_accept_applies_to_one_edge_by_rule_and_symbol_glob():
    manifest = parse_manifest(VALID + ACCEPT_ONE, "pairs.toml")
    [edge] = manifest.checks
    error = Finding(Rule.ARITY_DRIFT, Severity.ERROR, "pv.a:f", (Site("p.py", 1),), "m")
    other = Finding(Rule.UNRESOLVED_IMPORT, Severity.ERROR, "pv.a:f", (Site("p.py", 2),), "m")
    found = accept([error, other], edge, "0.31.0", date(2026, 1, 1))
    assert [f.accepted for f in found] == ["judged", ""]
    assert accept([error], edge, "0.34.0", date(2026, 1, 1))[0].accepted == ""  # out of range
    assert accept([error], edge, "0.31.0", date(2026, 7, 1))[0].accepted == ""  # expired


VALID = """
[components.plug]
repo = "repos/plug"
package = "plug"

[components.pv]
repo = "repos/pv"
package = "pv"

[[pairs]]
name = "a"
plug = "v1"
pv = "v0.31.0"

[[checks]]
consumer = "plug"
provider = "pv"
"""
ACCEPT_ONE = """
[[checks.accept]]
rule = "arity-drift"
symbol = "pv.a:*"
reason = "judged"
provider = ">=0.31,<0.34"
until = 2026-06-30
"""


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda t: t.replace('rule = "arity-drift"', 'rule = "arity"'),
            ":20: checks[0].accept[0].rule: Input should be",
        ),
        (
            lambda t: t.replace('reason = "judged"', 'reason = " "'),
            ":22: checks[0].accept[0].reason: must not be empty",
        ),
        (
            lambda t: t.replace('reason = "judged"\n', ""),
            ":19: checks[0].accept[0].reason: missing required key 'reason'",
        ),
        (
            lambda t: t.replace('">=0.31,<0.34"', '"0.31 or later"'),
            ":23: checks[0].accept[0].provider: '0.31 or later' is not a version specifier",
        ),
        (
            lambda t: t.replace("until = 2026-06-30", 'until = "soon"'),
            ":24: checks[0].accept[0].until: Input should be",
        ),
        (
            lambda t: t.replace('reason = "judged"', 'reason = "judged"\nsite = "x"'),
            ":23: checks[0].accept[0].site: unknown key",
        ),
    ],
)
def test_a_malformed_acceptance_is_one_line_with_file_line_and_key(edit, expected: str):
    with pytest.raises(InputError) as caught:
        parse_manifest(edit(VALID + ACCEPT_ONE), "pairs.toml")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"pairs.toml{expected}"), caught.value


def test_a_lock_without_acceptances_reads_and_writes_as_before(demo_project: Path):
    runner.invoke(app, ["lock", "--manifest", str(demo_project)])
    text = (demo_project.parent / "atompin.lock").read_text()
    assert "accepted" not in text
    assert lockfile.dumps(lockfile.loads(text)) == text
