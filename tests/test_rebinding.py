"""arity-drift of a replacement that binds otherwise than the method it replaces: a plain function
stored in a staticmethod's place becomes a method (an instance binds to its first parameter), and
`staticmethod(f)` / `classmethod(f)` stored in a method's place bind as they say. Each real call is
judged by how it reaches the replacement: through an instance or through the class."""

from __future__ import annotations

from conftest import brief, only


def provider(call: str) -> dict[str, str]:
    """A sampler whose `apply` is a staticmethod, plain method or classmethod, and a provider
    function making `call`."""
    return {
        "pv/__init__.py": "",
        "pv/sampler.py": f"""
            class Sampler:
                @staticmethod
                def scale(logits, temp, all_random):
                    return logits

                def pick(self, logits):
                    return logits

                @classmethod
                def from_config(cls, config):
                    return cls()

                def run(self, logits, temp):
                    return {call}
        """,
    }


def consumer(source: str) -> dict[str, str]:
    return {"plug/__init__.py": "", "plug/mod.py": source}


SCALE_WITH_SELF = """
    import pv.sampler

    def scale(self, logits, temp, all_random):
        return logits

    pv.sampler.Sampler.scale = scale
"""


def test_a_function_with_self_in_a_staticmethods_place_fits_a_call_through_self(run_check):
    # vllm-mindspore's shape: `Sampler.apply_temperature = apply_temperature(self, logits, temp,
    # all_random)` over a staticmethod the provider calls as `self.apply_temperature(...)`: the
    # instance binds to `self`, and the call fits.
    result = run_check(provider("self.scale(logits, temp, True)"), consumer(SCALE_WITH_SELF))
    assert only(result, "arity-drift") == []


def test_a_function_with_self_in_a_staticmethods_place_misses_a_call_through_the_class(run_check):
    result = run_check(provider("Sampler.scale(logits, temp, True)"), consumer(SCALE_WITH_SELF))
    [finding] = only(result, "arity-drift")
    assert finding.severity.value == "error"
    assert "cannot take the real call at pv/sampler.py:14: it does not pass the required all_random" in finding.message


SCALE_WITHOUT_SELF = """
    import pv.sampler

    def scale(logits, temp, all_random):
        return logits

    pv.sampler.Sampler.scale = scale
"""


def test_a_function_without_self_in_a_staticmethods_place_misses_a_call_through_self(run_check):
    result = run_check(provider("self.scale(logits, temp, True)"), consumer(SCALE_WITHOUT_SELF))
    assert brief(result) == [("arity-drift", "error", "pv.sampler:Sampler.scale", ["plug/mod.py:6"])]
    assert "it passes 3 positional argument(s); the signature takes at most 2" in result.findings[0].message


def test_a_function_without_self_in_a_staticmethods_place_called_through_the_class_is_a_warning(run_check):
    # vllm-mindspore's `ParallelConfig.has_unfinished_dp`: the provider calls it through the class
    # only, so nothing fails today, but a call through an instance would.
    result = run_check(provider("Sampler.scale(logits, temp, True)"), consumer(SCALE_WITHOUT_SELF))
    [finding] = only(result, "arity-drift")
    assert finding.severity.value == "warning"
    assert "the original is a staticmethod, the replacement a plain function" in finding.message
    assert "no call found in the provider or the consumer fails (1 checked)" in finding.message


def test_a_staticmethod_wrapper_in_a_methods_place_does_not_bind_self(run_check):
    src = """
        import pv.sampler

        def pick(logits):
            return logits

        pv.sampler.Sampler.pick = staticmethod(pick)
    """
    result = run_check(provider("self.pick(logits)"), consumer(src))
    assert only(result, "arity-drift") == []
    by_setattr = src.replace(
        "pv.sampler.Sampler.pick = staticmethod(pick)", 'setattr(pv.sampler.Sampler, "pick", staticmethod(pick))'
    )
    assert only(run_check(provider("self.pick(logits)"), consumer(by_setattr)), "arity-drift") == []
    unwrapped = src.replace("staticmethod(pick)", "pick")
    assert [
        f.severity.value for f in only(run_check(provider("self.pick(logits)"), consumer(unwrapped)), "arity-drift")
    ] == ["error"]


def test_a_staticmethod_wrapper_of_a_function_with_self_misses_a_call_through_self(run_check):
    src = """
        import pv.sampler

        def pick(self, logits):
            return logits

        pv.sampler.Sampler.pick = staticmethod(pick)
    """
    result = run_check(provider("self.pick(logits)"), consumer(src))
    [finding] = only(result, "arity-drift")
    assert finding.severity.value == "error"
    assert "does not pass the required logits (its positional arguments bind to self)" in finding.message


def test_a_plain_function_in_a_classmethods_place_misses_a_call_through_the_class(run_check):
    src = """
        import pv.sampler

        def from_config(cls, config):
            return cls()

        pv.sampler.Sampler.from_config = {value}
    """
    call = "Sampler.from_config(logits)"
    [finding] = only(run_check(provider(call), consumer(src.format(value="from_config"))), "arity-drift")
    assert finding.severity.value == "error"
    assert "does not pass the required config (its positional arguments bind to cls)" in finding.message
    assert only(run_check(provider(call), consumer(src.format(value="classmethod(from_config)"))), "arity-drift") == []


# -- the `self` of a function installed on a provider class ---------------------------------

# An engine whose `step` needs a `ratio` (vLLM's NIXL worker's `_logical_to_kernel_block_ids`).
ENGINE_SOURCE = """
    class Engine:
        def step(self, batch, ratio):
            return batch

        def run(self):
            return self.step([], 1)

    class Other:
        def run(self):
            return None
"""
ENGINE = {"pv/__init__.py": "", "pv/engine.py": ENGINE_SOURCE}


def test_the_self_of_a_function_installed_on_one_provider_class_is_an_instance_of_it(run_check):
    # vllm-gaudi installs `kv_caches_postprocess(self, metadata)` on vLLM's NIXL worker, whose body
    # calls `self._logical_to_kernel_block_ids(ids)`: vLLM 0.26 made `ratio` required.
    src = """
        from pv.engine import Engine

        def run(self):
            self.gone()
            return self.step([])

        Engine.run = run
    """
    # At the baseline, `step` took no ratio and `gone` was there.
    old = "class Engine:\n    def step(self, batch):\n        return batch\n\n    def gone(self):\n        pass\n"
    result = run_check(ENGINE, consumer(src), baseline={**ENGINE, "pv/engine.py": old})
    assert sorted(brief(result)) == [
        ("arity-drift", "error", "pv.engine:Engine.step", ["plug/mod.py:5"]),
        ("missing-member", "error", "pv.engine:Engine.gone", ["plug/mod.py:4"]),
    ]
    assert "the `self` of a function installed on it" in only(result, "missing-member")[0].message
    # Called there in a way the baseline's `gone(self)` did not take either: that code did not run
    # where the consumer works (vllm-mindspore's `_compute_cascade_attn_prefix_len`).
    stale = run_check(
        ENGINE, consumer(src.replace("self.gone()", "self.gone(1)")), baseline={**ENGINE, "pv/engine.py": old}
    )
    [member] = only(stale, "missing-member")
    assert member.severity.value == "warning"
    assert "the call there did not fit it at the baseline either: it passes 1 positional argument(s)" in member.message
    # Installed as a staticmethod, its first parameter is no instance: not typed.
    static = src.replace("Engine.run = run", "Engine.run = staticmethod(run)")
    sites = {
        str(site)
        for f in run_check(ENGINE, consumer(static), baseline={**ENGINE, "pv/engine.py": old}).findings
        for site in f.sites
    }
    assert not sites & {"plug/mod.py:4", "plug/mod.py:5"}
    # Installed on two classes, its `self` may be either: not typed.
    twice = src.replace("Engine.run = run", "Engine.run = run\n        Other.run = run").replace(
        "from pv.engine import Engine", "from pv.engine import Engine, Other"
    )
    assert [f for f in run_check(ENGINE, consumer(twice)).findings if f.rule.value != "patch-addition"] == []


def test_a_plain_method_called_through_cls_does_not_bind_its_first_parameter(run_check):
    # `cls.pick(obj)` in a classmethod passes `obj` as `self`: a replacement `pick(self)` takes it.
    src = """
        import pv.sampler

        def pick(self):
            return None

        pv.sampler.Sampler.pick = pick
    """
    files = provider("None")
    files["pv/sampler.py"] = files["pv/sampler.py"].replace(
        "def run(self",
        "@classmethod\n                def build(cls, obj):\n                    return cls.pick(obj)\n\n                def run(self",
    )
    result = run_check(files, consumer(src))
    assert [f.severity.value for f in only(result, "arity-drift")] == ["warning"]  # narrower; no call misses it
