"""Signatures (arity-drift): does every call, replacement and handover fit the provider's signatures?"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from atompin.analysis.arity import (
    CallShape,
    Mismatch,
    as_called,
    binding_problem,
    binds_receiver,
    call_problem,
    checkable,
    describe_change,
    keywords_not_taken,
    launch_problem,
    render_shift,
    replacement_problem,
    same_kind,
    shifted_arguments,
    takes_anything,
    untakeable_keywords,
)
from atompin.analysis.callsites import CallerSearch, ProviderCall, call_pattern, searched_as
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.members import subclass_may_hold
from atompin.analysis.name_sites import SiteKind, SiteReceiver
from atompin.analysis.names import quoted
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, Target, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import CallUse, Guard, PatchSite, Ref, Registration
from atompin.analysis.usage_checks.common import at_baseline_too
from atompin.model import Rule, Severity, Site

if TYPE_CHECKING:
    from atompin.analysis.checks import UsageChecker


# More files than this define a name: it is a common one, not one class family's.
_FEW_FILES = 8


class SignatureChecks:
    """Signatures (arity-drift): does every call, replacement and handover fit the provider's signatures?"""

    # Set here, made in `UsageChecker.__init__` (declared so the type is that one).
    _baseline_callers: CallerSearch | None
    _caller_names: set[str] | None

    def caller_names(self: UsageChecker) -> set[str]:
        """The names of every callable replaced by a narrower function, as the caller search looks
        for their calls (`searched_as`: a method's, through the patched class): whose calls in the
        provider the patch checks look up (`callers.start_search` can look for them ahead)."""
        if self._caller_names is None:
            self._caller_names = set()
            for patch in self.usage.patches:
                if self._narrower(patch):
                    through = self._patched_class(patch)
                    self._caller_names.update(
                        searched_as(name, through if reached.kind is TargetKind.FUNCTION else None)
                        for reached, name in self._call_targets(patch)
                    )
        return self._caller_names

    def _patched_class(self: UsageChecker, patch: PatchSite) -> ClassRef | None:
        """The provider class a patch sets an attribute of (None for a module's)."""
        _, owner = self.first(patch.owner)
        return owner.target.cls if owner.target is not None and owner.target.kind is TargetKind.CLASS else None

    def _prime_callers(self: UsageChecker) -> None:
        """Search the provider once for the calls of every callable replaced by a narrower function."""
        names = self.caller_names()
        if names:
            self.callers.prime(names)

    def _narrower(self: UsageChecker, patch: PatchSite) -> bool:
        """Is the patch's replacement narrower than the original it replaces?"""
        if patch.replacement is None or not checkable(patch.replacement):
            return False
        _, owner = self.first(patch.owner)
        if not owner.found or owner.target is None:
            return False
        res = self.index.getattr(owner.target, patch.attr)
        original = res.target.signature if res.found and res.target is not None else None
        if original is None or not checkable(original):
            return False
        if takes_anything(original) or not same_kind(original, patch.replacement):
            return True  # (binding otherwise, through the class or an instance, only real calls can tell)
        return replacement_problem(original, patch.replacement) is not None

    def _replacement_problem(
        self: UsageChecker, patch: PatchSite, original: Signature, replacement: Signature
    ) -> Mismatch | None:
        """Why `replacement` cannot take every call `original` takes. When the two bind otherwise
        (a plain function stored in a staticmethod's place), they are compared as a call through
        an instance sees them; a call through the class that misses is found among the real calls."""
        if same_kind(original, replacement):
            return replacement_problem(original, replacement)
        through_instance = self._patched_class(patch) is not None
        found = replacement_problem(
            as_called(original, binds_receiver(original, through_instance)),
            as_called(replacement, binds_receiver(replacement, through_instance)),
        )
        if found is None:
            return None
        how = f"the original is {_binding_kind(original)}, the replacement {_binding_kind(replacement)}"
        return Mismatch(f"{how}; called through an instance, {found.message}", found.definite)

    def _call_targets(self: UsageChecker, patch: PatchSite) -> list[tuple[Target, str]]:
        """What a provider call names to reach the patched callable: the method or function by its name,
        and for `__init__` the class itself."""
        _, owner = self.first(patch.owner)
        if not owner.found or owner.target is None:
            return []
        res = self.index.getattr(owner.target, patch.attr)
        if not res.found or res.target is None:
            return []
        out = [(res.target, patch.attr)]
        if patch.attr == "__init__" and owner.target.kind is TargetKind.CLASS and owner.target.cls is not None:
            out.append((owner.target, owner.target.cls.qualname.rpartition(".")[2]))
        return out

    def _real_calls(self: UsageChecker, patch: PatchSite, target: Target) -> list[ProviderCall]:
        """Calls of the patched callable in the provider (but from callers the consumer replaced too) and in
        the consumer (their function "" and caller key ("", ""))."""
        out: list[ProviderCall] = []
        _, owner = self.first(patch.owner)
        owner_class = self._patched_class(patch)
        owner_module = (
            owner.target.symbol if owner.target is not None and owner.target.kind is TargetKind.MODULE else ""
        )
        for reached, name in self._call_targets(patch):
            through = owner_class if reached.kind is TargetKind.FUNCTION else None
            binding = owner_module if reached.kind is TargetKind.FUNCTION else ""
            for call in self.callers.calls(reached, name, through, self.own.replacements.__contains__, binding):
                if call.caller_key in self.own.replacements or self._substituted_caller(call.caller_key[0]):
                    continue  # the consumer replaced the function (or the class) that makes this call
                calling_module = call.caller_key[0].partition(":")[0]
                if binding and calling_module != binding and (calling_module, patch.attr) in self.own.replacements:
                    # The consumer also patches the calling module's own binding (`m.f` and `n.f`, n
                    # importing f from m): the call reads that one, and is that patch's to judge.
                    continue
                out.append(call)
        for use in self.usage.calls:
            _, res = self.first(use.choices)
            if res.found and (found := res.target) is not None and found.symbol == target.symbol:
                out.append(ProviderCall(use.site, use.shape, "", ("", ""), found.through_instance))
        return out

    def _registered_in_place(self: UsageChecker, registration: Registration) -> None:
        """A consumer class registered out of tree under the name of a provider class it derives
        from, one whose `__new__` hands out what is registered under its own name (vLLM's
        `CustomOp.register_oot`): every construction of that class builds the consumer's, so the
        provider's constructions are judged against its `__init__`, as a class installed in the
        provider class's place is."""
        init = self._consumer_init(registration.consumer_class)
        if init is None or registration.consumer_class not in self.hierarchy.classes:
            return
        replaced = next(
            (
                node
                for node in self.hierarchy.mro(registration.consumer_class)
                if isinstance(node, ClassRef)
                and node.qualname.rpartition(".")[2] == registration.name
                and self._custom_new(node)
            ),
            None,
        )
        if replaced is None:
            return
        *outer, name = replaced.qualname.split(".")
        patch = PatchSite(
            owner=(Ref(replaced.module, tuple(outer)),),
            attr=name,
            site=registration.site,
            guard=Guard.NONE,
            function="",
            replacement=init,
            when=registration.when,
            constructor=True,
            registered=True,
        )
        _, owner = self.first(patch.owner)
        if owner.found and owner.target is not None:
            res = self.index.getattr(owner.target, name)
            if res.found:
                self._replacement_drift(patch, self.symbol(Ref(replaced.module, (*outer, name))), res)

    def _replacement_drift(self: UsageChecker, patch: PatchSite, symbol: str, res: Resolution) -> None:
        """A replacement narrower than the original is an error when a real call cannot take it, else a
        warning. A class in a class's place, installed when its module is imported (not for a while,
        inside a function), is judged by the two `__init__`s."""
        original = res.target.signature if res.target is not None else None
        if _runs_init(patch) and res.target is not None:
            run = _callable_run(self.index, res.target) if res.target.kind is TargetKind.CLASS else None
            original = run[0].signature if run is not None else None
        if patch.replacement is None or not checkable(original) or not checkable(patch.replacement):
            return
        assert original is not None and res.target is not None
        replacement = patch.replacement
        problem = self._replacement_problem(patch, original, replacement)
        if not problem and not takes_anything(original) and same_kind(original, replacement):
            return
        both = f"Original {original.render()}; replacement {replacement.render()}"
        calls = self._real_calls(patch, res.target)
        # A call that does not fit is an error; one that may never run (`_why_not_run`), a warning.
        misfits = []
        for call in calls:
            site, shape, caller = call.site, call.shape, call.caller_key
            # Each binds as it is: a function stored in a staticmethod's place binds its receiver.
            bound, bound_there = call.binds(original), call.binds(replacement)
            if call_problem(original, shape, bound) is None:
                misfit = call_problem(replacement, shape, bound_there)
                misfit = f"it {misfit}" if misfit else binding_problem(original, replacement, shape, bound, bound_there)
                if misfit:
                    # An error needs a call that may run and that the baseline provider did not make too.
                    why = self._why_not_run(caller, self._patched_class(patch)) if caller[0] else ""
                    if not why and caller[0]:
                        why = self._made_at_baseline(patch, site, shape, caller, bound_there)
                    misfits.append((site, shape, why, misfit))
        misfits.sort(key=lambda m: bool(m[2]))
        if misfits:
            site, shape, not_run, misfit = misfits[0]
            severity = Severity.WARNING if not_run else Severity.ERROR
            where = f" ({not_run})" if not_run else ""
            alike = (str(m[0]) for m in misfits[1:] if bool(m[2]) == bool(not_run))
            others = [where for where in dict.fromkeys(alike) if where != str(site)]
            also = f"; so do {len(others)} more, at {', '.join(others[:3])}{', …' if len(others) > 3 else ''}"
            by_name = self._passing_too(patch, res.target, original, [m[0] for m in misfits])
            message = (
                f"{_registered_lead(patch)}the replacement cannot take the real call at {site}{where}: {misfit} "
                f"(the call passes {shape.render()}){also if others else ''}{by_name}. {both}"
            )
            self.findings.add(Rule.ARITY_DRIFT, severity, symbol, [patch.site], message)
            return
        if not problem:
            return  # the original takes anything, and no real call misses the replacement
        passing = self._passing_new_keyword(patch, res.target, original)
        if passing is not None:
            site, keyword = passing
            message = (
                f"the replacement cannot take {keyword}= ({keyword} new since the baseline), which the provider "
                f"passes to a .{patch.attr}(...) call at {site} (found by the name and the keyword). {both}"
            )
            self.findings.add(Rule.ARITY_DRIFT, Severity.ERROR, symbol, [patch.site], message)
            return
        if patch.registered:
            return  # (one of many classes a registry swaps in: only a construction that fails is said)
        narrower = (
            "the replacement class's `__init__` is narrower than the patched class's"
            if patch.constructor
            else "the replacement is narrower than the patched function"
        )
        # As narrow where the consumer works, the patched callable the same there: nothing the bump changed.
        unchanged = self._same_at_baseline(patch, res.target, original)
        since = f" (unchanged {self.baseline.since})" if unchanged and self.baseline is not None else ""
        message = (
            f"{_registered_lead(patch)}{narrower}{since}: {problem.message}; no call found in the "
            f"provider or the consumer fails ({len(calls)} checked). {both}"
        )
        severity = Severity.INFO if unchanged else Severity.WARNING
        self.findings.add(Rule.ARITY_DRIFT, severity, symbol, [patch.site], message)

    def _passing_too(
        self: UsageChecker, patch: PatchSite, target: Target, original: Signature, found: list[Site]
    ) -> str:
        """Another provider call that passes the replacement a keyword new since the baseline, found by
        the name and the keyword (`_passing_new_keyword`), said beside the real calls found (`found`):
        vLLM 0.29's GPU worker passes `kv_cache_allocation_context=` to
        `self.model_runner.initialize_kv_cache`, where the real call found is its CPU runner's
        `super()` call. "" when there is none, or it is among them."""
        passing = self._passing_new_keyword(patch, target, original)
        if passing is None or str(passing[0]) in {str(site) for site in found}:
            return ""
        site, keyword = passing
        call = f".{patch.attr}(...) call at {site}"
        return f"; the provider also passes {keyword}= to a {call} (found by the name and the keyword)"

    def _same_at_baseline(self: UsageChecker, patch: PatchSite, target: Target, original: Signature) -> bool:
        """Was the patched callable's signature (`original`, its `__init__`'s for a class) the same at
        the baseline, where the patch ran too? Then the replacement was as narrow there."""
        if self.baseline is None or self.baseline.kept_from(patch.site.path, patch.when):
            return False
        before = self.baseline.index.resolve_symbol(target.symbol)
        then = before.target if before.found else None
        if then is not None and then.kind is TargetKind.CLASS and _runs_init(patch):
            run = _callable_run(self.baseline.index, then)  # as `_replacement_drift` reads the original
            then = run[0] if run is not None else None
        if then is None or then.signature is None:
            return False
        return _shape(then.signature) == _shape(original)

    def _made_at_baseline(
        self: UsageChecker,
        patch: PatchSite,
        site: Site,
        shape: CallShape,
        caller: tuple[str, str],
        bound: bool,
    ) -> str:
        """Did the baseline provider make this call of the patched callable too, or another that the
        replacement could not take either (`bound`: the call supplies its first parameter): in the
        same file, in a function of the same name, or of a name that no longer makes such a call
        where this function made none (renamed: vLLM 0.30's `get_transfer_results`, 0.27's
        `get_finished`), or, the file being new since, in a function of the same name and class in
        a file gone since (moved: vLLM 0.31's GLM5Next attention, from `nvidia/` to `common/`)?
        (Lines move between releases.) Then the replacement missed it where the consumer works:
        not drift (`at_baseline_too`, saying which); "" when it did not, or when the patch did not
        run at the baseline (`Baseline.kept_from`)."""
        if self.baseline is None or self.baseline.kept_from(patch.site.path, patch.when):
            return ""
        if self._baseline_callers is None:
            self._baseline_callers = CallerSearch(self.baseline.index, platform=self.baseline.platform)
            self._baseline_callers.names.consumer_reaches = self.baseline.consumer_reaches
        owner = caller[0].partition(":")[2]  # the calling class's qualname ("" for a function)
        names = [name for _, name in self._call_targets(patch)]
        then = [raw for name in names for raw in self._baseline_callers.file_calls(site.path, name)]
        made = [raw.shape for raw in then if raw.function.rpartition(".")[::2] == (owner, caller[1])]
        if not made:
            now = {raw.function for name in names for raw in self.callers.file_calls(site.path, name)}
            made = [raw.shape for raw in then if raw.function not in now and raw.function.rpartition(".")[0] == owner]
        where = "there"
        if not made and site.path not in self.baseline.index.tree.files:
            moved = self._moved_calls(names, (owner, caller[1]))
            made = [shape for _, shape in moved]
            where = f"in {', '.join(dict.fromkeys(path for path, _ in moved))}, a file gone since" if moved else where
        if shape in made:
            return at_baseline_too(f"the provider made the same call {where}")
        assert patch.replacement is not None
        if any(call_problem(patch.replacement, each, bound) is not None for each in made):
            return at_baseline_too(f"the provider made a call {where} that the replacement could not take either")
        return ""

    def _moved_calls(self: UsageChecker, names: list[str], function: tuple[str, str]) -> list[tuple[str, CallShape]]:
        """(path, shape) of each call of `names` the baseline provider made in `function` (its
        class's qualname and its name) in a file that is gone since: where code that moved to a
        new file made its calls. Only the gone files that write one of the names are parsed."""
        assert self.baseline is not None and self._baseline_callers is not None
        package = self.index.package
        now = set(self.index.tree.python_files(package))
        gone = [path for path in self.baseline.index.tree.python_files(package) if path not in now]
        found = []
        for path in gone:
            for name in names:
                found += [
                    (path, raw.shape)
                    for raw in self._baseline_callers.file_calls(path, name)
                    if raw.function.rpartition(".")[::2] == function
                ]
        return found

    def _passing_new_keyword(
        self: UsageChecker, patch: PatchSite, target: Target, original: Signature
    ) -> tuple[Site, str] | None:
        """A provider call of a method of the patched name, on an object it was handed, that passes by
        keyword a parameter of the original new since the baseline which the replacement cannot
        take, and fits the original (the keyword is the evidence it is that method: vLLM 0.34's
        `pool.free_blocks(blocks, evict_first=...)` against a `(self, ordered_blocks)` wrapper).
        None without a baseline, or when no call does."""
        replacement = patch.replacement
        _, owner = self.first(patch.owner)
        on_class = owner.target is not None and owner.target.kind is TargetKind.CLASS
        if self.baseline is None or replacement is None or not on_class or original.is_staticmethod:
            return None  # (a method called on an object: its first parameter is supplied)
        before = self.baseline.index.resolve_symbol(target.symbol)
        old = before.target.signature if before.found and before.target is not None else None
        if old is None:
            return None
        added = describe_change(old, original).added
        new = [name for name in untakeable_keywords(replacement, original) if name in added]
        if not new:
            return None
        found = self.callers.names.find([patch.attr], also=[f"{k}=" for k in new], called=[patch.attr])
        for site in found.get(patch.attr, []):
            if site.kind is not SiteKind.CALL or site.receiver is not SiteReceiver.OTHER or site.shape is None:
                continue
            passed = [k for k in site.shape.keywords if k in new]
            if passed and call_problem(original, site.shape, True) is None:
                if call_problem(replacement, site.shape, True) is not None:
                    return Site(site.path, site.line), passed[0]
        return None

    def _call_drift(self: UsageChecker, call: CallUse) -> None:
        judged = self._call_problem(call)
        if judged is None:
            self._shifted_call(call)
            return
        ref, target, problem = judged
        assert target.signature is not None
        what = "the launch" if call.launch else "the call"
        message = (
            f"{what} {problem}: the provider has {target.symbol}{target.signature.render()}, "
            f"{what} passes {call.shape.render()}"
        )
        if call.keywords_from:
            message += f" (its `**` hands on the keywords of the call at {call.keywords_from})"
        severity = Severity.ERROR
        if call.caught:
            severity, message = Severity.WARNING, f"degraded: {message}; the TypeError is caught ({call.caught})"
        elif call.mixed:
            # Which branch bound the name where the call runs is the consumer's own state, not read here.
            severity = Severity.WARNING
            message += (
                "; the called name is bound to the provider's object by one branch of an `if` on the "
                "consumer's own state and to another object by the other: this call may never reach it"
            )
        elif call.fallback_of and self._fits_in_try(call.fallback_of, self.symbol(ref)):
            # `try: f(new form) except TypeError: f(old form)`: the try's call fits, so this one never runs here.
            severity = Severity.WARNING
            message += (
                f"; a fallback for another release: the call it falls back from (the try at {call.fallback_of}) fits"
            )
        elif (patch := self._replaced_binding(call, ref, target)) is not None:
            assert patch.replacement is not None
            severity = Severity.WARNING
            message += (
                f"; but the consumer replaces that name at {patch.site} with {patch.replacement.render()}, which "
                "takes this call: it fails only where the name is bound before that patch runs"
            )
        elif (before := self._baseline_call_problem(ref, call)) is not None:
            # Not drift: the provider the consumer was written against could not take it either, and
            # the consumer works there. Code that does not run, or a bug it shipped with.
            severity = Severity.WARNING
            message += f"; {at_baseline_too(before)}"
        # Sites failing another way are another finding: each message says what is wrong at its sites.
        self.findings.add(Rule.ARITY_DRIFT, severity, self.symbol(ref), [call.site], message, key=problem)

    def _shifted_call(self: UsageChecker, call: CallUse) -> None:
        """A call that fits both the baseline's signature and this one, whose positional arguments
        fill other parameters here (`shifted_arguments`): no TypeError, wrong values. Not for a
        callable the consumer replaces (its own function takes the call)."""
        if self.baseline is None or not call.shape.positional or call.shape.star:
            return  # nothing passed by position (or not known what): nothing can shift
        ref, res = self.first(call.choices)
        if not res.found or res.target is None or self.own.replacements.get(self._callable_key(ref, res.target)):
            return
        then = self.baseline.index.resolve(ref.module, ref.path)
        run = _callable_run(self.index, res.target)
        before = _callable_run(self.baseline.index, then.target) if then.found else None
        if run is None or before is None:
            return
        (target, bound), (old, bound_then) = run, before
        assert target.signature is not None and old.signature is not None
        if bound != bound_then or call_problem(old.signature, call.shape, bound) is not None:
            return
        if not self.baseline.runs(call.when):
            return  # not code that ran at the baseline (`else:` of `if vllm_version_is("0.23.0")`)
        shifted = shifted_arguments(old.signature, target.signature, call.shape, bound)
        if not shifted:
            return
        message = (
            f"the call {render_shift(shifted)}: the provider has {target.symbol}{target.signature.render()}, "
            f"it had {old.signature.render()} at the baseline; the call passes {call.shape.render()}"
        )
        self.findings.add(Rule.ARITY_DRIFT, Severity.ERROR, self.symbol(ref), [call.site], message, key=message)

    def _baseline_call_problem(self: UsageChecker, ref: Ref, call: CallUse) -> str | None:
        """What is wrong with the same call at the baseline, by the callable's own signature there
        (the consumer's patches aside); None when it fits there, or there is no baseline or no
        signature to judge it by, or a version gate kept the call from running there."""
        if self.baseline is None or self.baseline.kept_from(call.site.path, call.when):
            return None  # (a call that did not run there: where the consumer works says nothing of it)
        res = self.baseline.index.resolve(ref.module, ref.path)
        if call.launch:
            return launch_problem(res.target.signature if res.found and res.target else None, call.shape)
        run = _callable_run(self.baseline.index, res.target) if res.found else None
        if run is None:
            return None
        target, bound = run
        assert target.signature is not None
        return call_problem(target.signature, call.shape, bound)

    def _replaced_binding(self: UsageChecker, call: CallUse, ref: Ref, target: Target) -> PatchSite | None:
        """For a call of a name bound by an import (`from m import f` then `f(...)`): a consumer patch
        of `m.f` whose function takes the call. Whether the import runs before or after the patch is
        not known here; after it, the call reaches the replacement."""
        if not call.imported or target.kind is not TargetKind.FUNCTION:
            return None
        for patch in self.own.replacements.get(self._callable_key(ref, target), []):
            if patch.replacement is not None and call_problem(patch.replacement, call.shape, target.bound) is None:
                return patch
        return None

    def _fits_in_try(self: UsageChecker, try_site: str, symbol: str) -> bool:
        """Does a call of `symbol` that is the body of the try at `try_site` fit this provider?"""
        return any(
            c.try_site == try_site and self.symbol(self.first(c.choices)[0]) == symbol and self._call_problem(c) is None
            for c in self.usage.calls
        )

    def _call_problem(self: UsageChecker, call: CallUse) -> tuple[Ref, Target, str] | None:
        """What is wrong with a call of a provider callable here: (its ref, the callable judged, the
        problem); None when it fits (or cannot be judged)."""
        ref, res = self.first(call.choices)
        if not res.found or res.target is None:
            return None
        if call.launch:
            problem = launch_problem(res.target.signature, call.shape)
            return (ref, res.target, problem) if problem else None
        if (
            res.target.kind is TargetKind.CLASS
            and res.target.cls is not None
            and self._substituted(res.target.cls, call)
        ):
            return None
        run = _callable_run(self.index, res.target)
        if run is None:
            return None
        target, bound = run
        key = (res.target.symbol, "__init__") if target is not res.target else self._callable_key(ref, res.target)
        assert target.signature is not None
        problem = call_problem(target.signature, call.shape, bound)
        if problem and call.replaces and res.target.cls is not None:
            # `replace(spec, compress_ratio=1)` of a `spec: KVCacheSpec`: a field of a subclass's.
            lacking = keywords_not_taken(target.signature, call.shape)
            if lacking and subclass_may_hold(self.hierarchy, res.target.cls, lacking):
                return None
        # A class call looks __init__ up when it runs, and so does `C.f(...)`: they reach a consumer patch.
        late = call.by_attribute or key[1] == "__init__"
        replaced = [p for p in self.own.replacements.get(key, []) if p.replacement is not None] if late else []
        if replaced:
            problem = self._replaced_call_problem(call, target.signature, bound, replaced, problem)
        return (ref, target, problem) if problem else None

    def _callable_key(self: UsageChecker, ref: Ref, target: Target) -> tuple[str, str]:
        """(owner symbol, name) of a called provider object, as the consumer's patches of it are keyed."""
        if not ref.path:
            return (target.symbol, "")
        owner = self.resolve(Ref(ref.module, ref.path[:-1]))
        return (owner.target.symbol if owner.found and owner.target is not None else "", ref.path[-1])

    def _replaced_call_problem(
        self: UsageChecker,
        call: CallUse,
        original: Signature,
        bound: bool,
        replaced: list[PatchSite],
        problem: str | None,
    ) -> str | None:
        """A call of a callable the consumer replaced binds to the replacement: it fails only when it fits
        none of the replacements (nor the original, where a patch may not be installed)."""
        conditional = any(p.guard is not Guard.NONE or p.when or p.alternative_group for p in replaced)
        if conditional and problem is None:
            return None
        misfits = []
        for patch in replaced:
            assert patch.replacement is not None
            misfit = call_problem(patch.replacement, call.shape, bound)
            if misfit is None:
                return None
            misfits.append(f"{misfit} (the consumer's replacement at {patch.site} has {patch.replacement.render()})")
        return misfits[0] if misfits else problem

    def _substituted(self: UsageChecker, cls: ClassRef, call: CallUse) -> bool:
        """Does the provider's `__new__` hand back a consumer class registered under this class's name?
        Then the call builds the consumer's class and is checked against its `__init__`, when known."""
        registered = self.own.registered_as(cls.qualname.rpartition(".")[2])
        if not registered or not self._custom_new(cls):
            return False
        for registration in registered:
            init = self._consumer_init(registration.consumer_class)
            if init is None or call_problem(init, call.shape, True) is None:
                return True
        return False

    def _why_not_run(self: UsageChecker, caller_key: tuple[str, str], on: ClassRef | None = None) -> str:
        """Why a provider call made inside the function `caller_key` (owner symbol, name) may never run
        ("" when nothing says so): a consumer subclass took that method over, or the provider calls
        the method only from functions the consumer replaces without calling the originals. With
        `on` (the class whose instances the call is about), only calls on such an instance count."""
        if (caller_key, on) not in self._not_run:
            self._not_run[caller_key, on] = self._why_not_run_uncached(caller_key, on)
        return self._not_run[caller_key, on]

    def _why_not_run_uncached(self: UsageChecker, caller_key: tuple[str, str], on: ClassRef | None) -> str:
        taken_over = self._taken_over(caller_key)
        if taken_over:
            return (
                f"made inside a provider method that {taken_over} overrides without calling it: only "
                "instances the consumer does not create run it"
            )
        for only_on in (None, on) if on is not None else (None,):
            callers = self._only_called_from_replaced(caller_key, only_on)
            if callers:
                where = ", ".join(f"{owner}.{name}" for owner, name in callers)
                on_one = f" on a {only_on}" if only_on is not None else ""
                return (
                    f"made inside {caller_key[0]}.{caller_key[1]}, which the provider calls{on_one} only from "
                    f"{where}, which the consumer replaces without calling the original"
                )
        return ""

    def _only_called_from_replaced(
        self: UsageChecker, caller_key: tuple[str, str], on: ClassRef | None = None
    ) -> list[tuple[str, str]]:
        """For a provider method: the functions the provider calls it from, by its name on any receiver,
        when every one of them is a function the consumer replaces without calling the original (and
        the name is written nowhere in the provider as a string, for `getattr`, nor anywhere in the
        consumer's text); else []. With `on`, only the calls that may be made on an `on` instance
        count, each as made by what `on` runs under its calling method's name
        (`CallerSearch.calling_functions_on`): vllm-ascend 0.23 replaces, on vLLM's
        `DeepSeekV4ToolParser`, both methods of the base class that call
        `_convert_params_with_schema`, whose call of `_repair_param_dict` then never runs on a V4
        parser, while it still does on the base class's."""
        owner, name = caller_key
        if ":" not in owner or not name or name.startswith("__"):
            return []  # a module-level function can be imported and called from anywhere
        if self.consumer_mentions(name):
            return []  # the consumer may call it itself
        if on is None:
            if not self._replaced_module_calls(name):
                return []  # no function the consumer replaces can call it
            callers = self.callers.calling_functions(name)
            anywhere = bool(callers)
        else:
            if not self._family_calls(name, on):
                return []  # no method `on` runs in the consumer's place can call it
            callers, anywhere = self.callers.calling_functions_on(name, on, self.own.replacements.__contains__)
        if not anywhere or not all(self._replaced_without_original(key) for key in callers):
            return []
        tree = self.index.tree
        if tree.files_containing(tree.python_files(self.index.package), list(quoted(name))):
            return []
        return callers

    def _family_calls(self: UsageChecker, name: str, on: ClassRef) -> bool:
        """Does the consumer replace a method of `on` or of a class of its order, and does the module
        of a class of that order call `name` (by its text)? Without both, no method that `on` runs in
        the consumer's place is among the callers: the provider-wide search is not needed."""
        order = [node for node in self.index.mro(on) if isinstance(node, ClassRef)]
        symbols = {str(node) for node in order}
        if not any(owner in symbols for owner, _ in self.own.replacements):
            return False
        return self._modules_call({node.module for node in order}, name)

    def _replaced_module_calls(self: UsageChecker, name: str) -> bool:
        """Does a module holding a provider function the consumer replaces call `name` (by its text)?
        Without one, no such function calls it: the provider-wide search is not needed."""
        return self._modules_call({owner.partition(":")[0] for owner, _ in self.own.replacements}, name)

    def _modules_call(self: UsageChecker, modules: set[str], name: str) -> bool:
        """Does one of these provider modules call `name` (by its text: `call_pattern`)?"""
        pattern = call_pattern([name])
        for module in modules:
            found = self.index.find(module)
            if found is not None and found.path.endswith(".py") and pattern.search(self.index.tree.read(found.path)):
                return True
        return False

    def _replaced_without_original(self: UsageChecker, key: tuple[str, str]) -> bool:
        """Does the consumer replace the provider function `key` with one that never calls the original?"""
        sites = {patch.site for patch in self.own.replacements.get(key, [])}
        found = [r for r in self.usage.contact.replacements if r.site in sites and r.attr == key[1]]
        return bool(found) and not any(r.calls_original for r in found)

    def _taken_over(self: UsageChecker, caller_key: tuple[str, str]) -> str:
        """For a call made inside provider method (class symbol, name): the consumer class that took
        that method over (`Hierarchy.taken_over_by`), or ""."""
        module, _, qualname = caller_key[0].partition(":")
        return self.hierarchy.taken_over_by(ClassRef(module, qualname), caller_key[1]) if qualname else ""

    def _covered_elsewhere(self: UsageChecker, name: str) -> str:
        """For a patch target the provider no longer has where the consumer patches it: "C.name
        overrides P.name" when a consumer class C overrides the provider method P.name, and every
        provider class that defines `name` derives from the one defining it first (the name is that
        class family's, not a common one such as `forward`); "" otherwise. vLLM 0.23 moved
        `config.model.is_cumem_allocator_available` onto `Platform`, which vllm-ascend's platform
        overrides; its guarded patch of the old name is for older releases."""
        if name.startswith("__"):
            return ""
        for cls in self.usage.contact.classes:
            if cls.muted or cls.method(name) is None:
                continue
            # The provider classes defining it in the class's order: the last is where it starts.
            provider = [d.node for d in self.hierarchy.definitions(cls.name, name) if isinstance(d.node, ClassRef)]
            if provider and self._defined_only_below(name, provider[-1]):
                return f"{cls.symbol}.{name} overrides {provider[-1]}.{name}"
        return ""

    def _defined_only_below(self: UsageChecker, name: str, root: ClassRef) -> bool:
        """Is every provider definition of `name` (`def name`, by the files' identifiers) a method of
        `root` or of a class deriving from it? Not when more than a few files define it."""
        [files] = self.callers.names.files_defining([({name}, 1)], at_most=_FEW_FILES)
        for path in files:
            module, _ = self.index.tree.module_name(path)
            info = self.index.module(module)
            if info is None or name in info.bindings:
                return False  # unreadable, or a module-level function of that name
            owners = [ClassRef(module, q) for q, c in info.classes.items() if name in c.members]
            if not owners or any(root not in self.index.mro(owner) for owner in owners):
                return False
        return bool(files)

    @cached_property
    def hierarchy(self: UsageChecker) -> Hierarchy:
        """The consumer's classes over the provider's, built once (the idle-hook rule reads it too)."""
        return Hierarchy(self.usage, self.index, self.consumer_mentions)

    def _substituted_caller(self: UsageChecker, owner: str) -> bool:
        """Is the caller's class one the provider hands out as the consumer's class (registered out of tree)?"""
        module, _, qualname = owner.partition(":")
        if not qualname or not self.own.registered_as(qualname.rpartition(".")[2]):
            return False
        return self._custom_new(ClassRef(module, qualname))

    def _custom_new(self: UsageChecker, ref: ClassRef) -> bool:
        for node in self.index.mro(ref):
            if isinstance(node, str):
                continue
            info = self.index.class_info(node)
            if info is not None and "__new__" in info.members:
                return True
        return False

    def _consumer_init(self: UsageChecker, dotted_class: str) -> Signature | None:
        """The `__init__` signature of a consumer class ("pkg.mod.Cls"), when it can be read."""
        if self.in_consumer is None:
            return None
        module, _, name = dotted_class.rpartition(".")
        res = self.in_consumer(f"{module}:{name}.__init__")
        if not res.found or res.target is None or not checkable(res.target.signature):
            return None
        return res.target.signature

    def sites_by_symbol(self: UsageChecker) -> dict[str, list[Site]]:
        """Every consumer site, by the normalized symbol it reaches (imports, chains, patches, calls)."""
        out: dict[str, list[Site]] = {}
        for group in self.usage.groups:
            for alt in group.alternatives:
                for use in alt:
                    out.setdefault(self.symbol(use.ref), []).append(use.site)
        for attr in self.usage.attributes:
            out.setdefault(self.symbol(attr.choices[0]), []).append(attr.site)
        for call in self.usage.calls:
            out.setdefault(self.symbol(call.choices[0]), []).append(call.site)
        for patch in self.usage.patches:
            out.setdefault(self.symbol(patch.owner[0].attr(patch.attr)), []).append(patch.site)
        return out


def _binding_kind(sig: Signature) -> str:
    """How a function stored on a class binds, for a message."""
    if sig.is_staticmethod:
        return "a staticmethod"
    return "a classmethod" if sig.is_classmethod else "a plain function (a method: it binds the instance)"


def _shape(sig: Signature) -> tuple[object, ...]:
    """What a call binds to in a signature: its parameters (names, kinds, defaults) and decorators."""
    return tuple((p.name, p.kind, p.has_default) for p in sig.params), sig.decorators


def _runs_init(patch: PatchSite) -> bool:
    """Is a class patched in a class's place when its module is imported (not for a while, inside a
    function)? Then it is judged by the two `__init__`s."""
    return patch.constructor and not (patch.function or patch.nested)


def _callable_run(index: ProviderIndex, target: Target | None) -> tuple[Target, bool] | None:
    """The function a call of `target` runs, with whether it is bound (a class runs its `__init__`),
    when its signature can judge the call; None for a class whose `__init__` a decorator writes
    unless it is a standard-library dataclass (`ProviderIndex.dataclass_init`), or no function
    with a checkable signature."""
    if target is None:
        return None
    bound = target.bound
    if target.kind is TargetKind.CLASS:
        made = index.namedtuple_new(target.cls) if target.cls is not None else None
        if made is not None:
            return Target(TargetKind.FUNCTION, f"{target.cls}.__new__", made, owner=target.cls), True
        if target.cls is not None and index.generates_init(target.cls):
            # A dataclass (or attrs class) writes its own __init__: read from the standard
            # library's fields, else not known.
            generated = index.dataclass_init(target.cls)
            if generated is None:
                return None
            return Target(TargetKind.FUNCTION, f"{target.cls}.__init__", generated, owner=target.cls), True
        init = index.getattr(target, "__init__")
        if not init.found or init.target is None:
            return None
        target, bound = init.target, True
    if target.kind is not TargetKind.FUNCTION or not checkable(target.signature):
        return None
    return target, bound


def _registered_lead(patch: PatchSite) -> str:
    """What a finding about a class registered out of tree says first: how it comes to be built."""
    if not patch.registered:
        return ""
    return f"the consumer's class is registered out of tree in {patch.attr}'s place, so `{patch.attr}(...)` builds it: "
