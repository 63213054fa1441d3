"""A member read only under `if self.flag:`, where the flag is gone since the baseline too: the
flag's read is the error, and what runs only under it never does (vllm-omni 0.30's runners read
`self.routed_experts_capturer` under `if self.routed_experts_initialized:`, both gone in vLLM 0.31)."""

from __future__ import annotations

from conftest import brief

BEFORE = {
    "pv/__init__.py": "",
    "pv/runner.py": """
        class Runner:
            def __init__(self):
                self.capturer = None
                self.capturing = False
                self.steps = 0
    """,
}
AFTER = {
    "pv/__init__.py": "",
    "pv/runner.py": """
        class Runner:
            def __init__(self):
                self.steps = 0
    """,
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/runner.py": """
        from pv.runner import Runner

        class MyRunner(Runner):
            def step(self):
                if self.capturing:
                    self.capturer.take()
                return self.steps
    """,
}


def test_a_read_under_a_flag_gone_too_is_a_warning(run_check):
    result = run_check(AFTER, CONSUMER, baseline=BEFORE)
    assert brief(result) == [
        ("missing-member", "warning", "pv.runner:Runner.capturer", ["plug/runner.py:6"]),
        ("missing-member", "error", "pv.runner:Runner.capturing", ["plug/runner.py:5"]),
    ]
    [warning] = [f for f in result.findings if f.severity.value == "warning"]
    assert warning.message.endswith(
        "(it runs only under `if self.capturing:`, and capturing is gone too: that read fails first, and nothing "
        "sets it at this provider)"
    )


def test_a_flag_that_is_still_there_or_set_by_the_consumer_leaves_the_error(run_check):
    kept = {
        **AFTER,
        "pv/runner.py": AFTER["pv/runner.py"].replace(
            "self.steps = 0", "self.steps = 0\n        self.capturing = False"
        ),
    }
    assert [sev for _, sev, _, _ in brief(run_check(kept, CONSUMER, baseline=BEFORE))] == ["error"]
    setting = CONSUMER["plug/runner.py"] + "\n            def start(self):\n                self.capturing = True\n"
    found = brief(run_check(AFTER, {**CONSUMER, "plug/runner.py": setting}, baseline=BEFORE))
    assert found == [("missing-member", "error", "pv.runner:Runner.capturer", ["plug/runner.py:6"])]
