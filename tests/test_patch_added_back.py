"""A patch installing a provider function the pin no longer has, which the consumer reads itself.

vllm-ascend assigns `mamba_utils.preprocess_mamba = preprocess_mamba` when its patch module is
imported, and its own runner calls `mamba_utils.preprocess_mamba(...)`: at vLLM 0.34, which
dropped the function, that read gets the consumer's, and nothing raises. Two helpers it installs
only on one branch of an `if` are read the same way, and there the read raises wherever the
assignment did not run."""

from __future__ import annotations

from tests.test_contact import check

BASELINE = {"pv/mamba.py": "def pre(x):\n    return x\n\ndef post(x):\n    return x\n"}
PIN = {"pv/mamba.py": "def post(x):\n    return x\n"}
RUNNER = "from pv import mamba\n\ndef run(x):\n    return mamba.pre(x)\n"
PATCH = "from pv import mamba\n\ndef pre(x):\n    return x + 1\n\n{install}"


def patch_findings(install: str, runner: str = RUNNER):
    consumer = {"plug/patch.py": PATCH.format(install=install), "plug/runner.py": runner}
    result = check(consumer, PIN, BASELINE)
    return [(f.severity.value, [str(s) for s in f.sites], f.message) for f in result.findings]


def test_installed_on_import_the_consumer_s_own_reads_get_it():
    [(severity, sites, message)] = patch_findings("mamba.pre = pre\n")
    assert (severity, sites) == ("warning", ["plug/patch.py:6", "plug/runner.py:4"])
    assert "adds the name back, and the consumer's own reads of it (plug/runner.py:4) get the replacement" in message


def test_installed_on_one_branch_the_consumer_s_own_read_raises_elsewhere():
    [(severity, sites, message)] = patch_findings(
        "import os\nif os.environ.get('FAST'):\n    pass\nelse:\n    mamba.pre = pre\n"
    )
    assert (severity, sites) == ("error", ["plug/patch.py:10", "plug/runner.py:4"])
    assert "raises AttributeError wherever this assignment did not run" in message


def test_a_read_in_the_patch_s_own_file_keeps_the_original():
    # `orig = mamba.pre` then `mamba.pre = wrapper`: the read of the original is what raises.
    [(severity, _, message)] = patch_findings("orig = mamba.pre\nmamba.pre = pre\n", runner="")
    assert severity == "error" and "the installer raises AttributeError at start-up" in message


def test_a_read_in_a_function_of_the_patch_s_own_file_gets_what_it_installs():
    # vllm-gaudi installs `torch_utils.make_tensor_with_pad` only `if not is_lazy():`, and a helper
    # of the same file calls `torch_utils.make_tensor_with_pad(...)`: vLLM 0.34 dropped it, so the
    # helper's read raises where the assignment did not run. The installer reads nothing.
    helper = "\ndef padded(x):\n    return mamba.pre(x)\n"
    [(severity, sites, message)] = patch_findings(
        "import os\nif os.environ.get('LAZY'):\n    pass\nelse:\n    mamba.pre = pre\n" + helper, runner=""
    )
    assert (severity, sites) == ("error", ["plug/patch.py:10", "plug/patch.py:13"])
    assert "raises AttributeError wherever this assignment did not run" in message
    assert "the installer raises" not in message
    # Installed whenever the module is imported: the helper gets it, and nothing raises.
    [(severity, sites, message)] = patch_findings("mamba.pre = pre\n" + helper, runner="")
    assert (severity, sites) == ("warning", ["plug/patch.py:6", "plug/patch.py:9"])
    # Read in the function that installs it, before: the original it keeps.
    installer = "def install():\n    orig = mamba.pre\n    mamba.pre = pre\n"
    [(severity, _, message)] = patch_findings(installer, runner="")
    assert severity == "error" and "the installer raises AttributeError at start-up" in message
