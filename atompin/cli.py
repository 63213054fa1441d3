"""The command line: a thin typer layer over the pipeline.

Exit statuses (everywhere): 0 pass, 1 findings that fail the gate,
2 bad input, 3 git or network failure, 4 internal error (a bug).
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand

from atompin import __version__
from atompin.errors import AtompinError, InputError

if TYPE_CHECKING:
    from atompin.lockdiff import LockDiff

EXIT_STATUSES = """Exit statuses:

\b
  0  pass
  1  findings fail the gate (a failing gated verdict, a stale lock, a moved tag, a bake mismatch)
  2  bad input: one line names the file, the line and the fix; nothing is written
  3  git or network failure; nothing is written
  4  internal error (a bug): one line; rerun with --debug for the traceback"""

ENVIRONMENT = """Environment:

\b
  ATOMPIN_CACHE_DIR  the cache folder (default: $XDG_CACHE_HOME/atompin, else ~/.cache/atompin)
  ATOMPIN_JOBS       processes a cold check may use (default: the CPUs available; 1: one process)
  NO_COLOR           no colour, even on a terminal"""


class _State:
    """Options of the root command that every command honours."""

    verbose = False
    debug = False
    quiet = False


STATE = _State()


class _App(typer.Typer):
    """A Typer whose commands follow the conventions of uv and Cargo: -v/--verbose, --debug and
    -q/--quiet are accepted after the subcommand too, and examples in help are shown verbatim."""

    def command(  # type: ignore[override]  # the same options, passed through
        self, *args: Any, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = super().command(*args, cls=_Command, **kwargs)

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            register(_with_global_flags(func))
            return func

        return decorator


class _Command(TyperCommand):
    """Help that names what to give (CONSUMER, PATH), never a Python type such as <str>."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and param.param_type_name in sections:
                name = re.sub(r" <[^>|]*>$", "", record[0]) if param.param_type_name == "argument" else record[0]
                sections[param.param_type_name].append((name, record[1]))
        for title, key in (("Arguments", "argument"), ("Options", "option")):
            if sections[key]:
                with formatter.section(title):
                    formatter.write_dl(sections[key])


_GLOBAL_FLAGS = (
    ("verbose", ("--verbose", "-v"), "Show info findings and progress lines."),
    ("debug", ("--debug",), "Show a traceback when something unexpected fails."),
    ("quiet", ("--quiet", "-q"), "Print nothing but the output asked for and errors."),
)


def _with_global_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` with the root's flags as options of its own (those it does not define itself)."""
    signature = inspect.signature(func, eval_str=True)
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[bool, typer.Option(*opts, help=help_text)],
        )
        for name, opts, help_text in _GLOBAL_FLAGS
        if name not in signature.parameters
    ]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for param in added:
            if kwargs.pop(param.name, False):
                setattr(STATE, param.name, True)
        return func(*args, **kwargs)

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *added]
    )
    wrapper.__doc__ = _verbatim_examples(inspect.getdoc(func) or "")
    return wrapper


def _verbatim_examples(text: str) -> str:
    """Mark indented paragraphs (examples) so help shows them line by line, never re-wrapped."""
    paragraphs = text.split("\n\n")
    marked = [
        "\b\n" + p if p.strip() and all(line.startswith(" ") for line in p.splitlines() if line.strip()) else p
        for p in paragraphs
    ]
    return "\n\n".join(marked)


app = _App(
    name="atompin",
    help="Keep a ROCm inference stack's pins honest: ATOM <-> vLLM <-> aiter.\n\n" + EXIT_STATUSES + "\n\n" + ENVIRONMENT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


class DiffFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


class TextOrJson(str, Enum):
    text = "text"
    json = "json"


def _fail(err: AtompinError) -> NoReturn:
    typer.echo(f"atompin: error: {err}", err=True)
    raise typer.Exit(err.exit_code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"atompin {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show info findings and progress lines.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback when something unexpected fails.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing but the output asked for and errors.")
    ] = False,
) -> None:
    """atompin: pinned pairs, checked statically, locked. Colour follows NO_COLOR."""
    STATE.verbose = verbose
    STATE.debug = debug
    STATE.quiet = quiet


# -- shared options ---------------------------------------------------------------

SiteOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--site", metavar="PATH", help="Where to look for installed distributions (repeatable; default: sys.path)."
    ),
]
ManifestOpt = Annotated[Path, typer.Option("--manifest", metavar="PATH", help="The pairs manifest.")]
LockOpt = Annotated[
    Path | None,
    typer.Option("--lock", metavar="PATH", help="The lock file (default: atompin.lock beside the manifest)."),
]
CacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        metavar="PATH",
        help="Cache folder for git repositories and indexes (default: $ATOMPIN_CACHE_DIR or the per-user cache dir).",
    ),
]

AllowStaleOpt = Annotated[
    bool,
    typer.Option(
        "--allow-stale", help="Use the lock even when pairs.toml or a relocation table changed since it was written."
    ),
]


class ExportFormat(str, Enum):
    bake = "bake"
    env = "env"
    github = "github"
    json = "json"


@contextmanager
def _progress(quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A live status line on a terminal; silent otherwise."""
    quiet = quiet or STATE.quiet
    if quiet or not sys.stderr.isatty():
        if STATE.verbose and not quiet:
            yield lambda msg: typer.echo(f"atompin: {msg}", err=True)
        else:
            yield lambda _msg: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("starting") as status:
        yield lambda msg: status.update(msg)


def _print_diff(diff: LockDiff, format: DiffFormat) -> None:
    from atompin.report import render_diff

    sys.stdout.write(render_diff(diff, format.value))


# -- commands -----------------------------------------------------------------------


@app.command()
def check(
    consumer: Annotated[
        str,
        typer.Argument(
            metavar="CONSUMER",
            help="Folder that holds the consumer's package folder (e.g. an ATOM checkout; a repository keeping it in src/ is read as such), or with --consumer-installed a distribution name.",
        ),
    ],
    provider: Annotated[
        Path | None,
        typer.Argument(
            metavar="PROVIDER",
            help="Folder that holds the provider's package folder (e.g. a vLLM checkout); omit with --installed.",
        ),
    ] = None,
    package: Annotated[
        str | None, typer.Option(metavar="NAME", help="Provider import name (default: the single top-level package).")
    ] = None,
    consumer_package: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="Consumer package to scan, dotted names allowed (default: every top-level package)."
        ),
    ] = None,
    format: Annotated[CheckFormat, typer.Option("--format", help="Output format.")] = CheckFormat.text,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Index cache folder (default: $ATOMPIN_CACHE_DIR or the per-user cache dir)."
        ),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the index cache.")] = False,
    relocations: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="A relocation table, or a folder of them (<folder>/<package>/*.toml, chosen by provider version).",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="The provider the consumer was written against (a source folder): signatures of moved symbols, vanished patch targets and version gates are compared with it, and the drift rules say what changed since.",
        ),
    ] = None,
    provider_version: Annotated[
        str | None,
        typer.Option(
            metavar="VERSION",
            help="The provider's version for choosing tables and deciding version gates (default: read from its version file).",
        ),
    ] = None,
    platform: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="The platform the code runs on (cpu, cuda, oot, rocm, tpu, xpu): what runs only on others, in the consumer or the provider, under `current_platform.is_cuda()` or `torch.version.cuda`, is not reported (default: any platform may run it).",
        ),
    ] = None,
    installed: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Check against this installed distribution (found through its metadata, never imported) instead of PROVIDER.",
        ),
    ] = None,
    consumer_installed: Annotated[
        bool, typer.Option("--consumer-installed", help="CONSUMER names an installed distribution.")
    ] = False,
    site: SiteOpt = None,
    pair: Annotated[
        str | None,
        typer.Option(
            "--pair",
            metavar="NAME",
            help="With --installed: also confirm the installed version and commit are this locked pair's pin.",
        ),
    ] = None,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
) -> None:
    """Check statically that everything CONSUMER imports or patches from PROVIDER exists.

    Nothing from either tree is imported or executed. Exit 0 when no error-level
    finding (and, with --installed --pair, the installed pin matches the lock),
    1 when there is one, 2 on bad input.

    Example:

        atompin check ./ATOM ./vllm --package vllm --consumer-package atom.plugin.vllm --format json

        atompin check ./ATOM ./vllm-0.33 --relocations relocations --baseline ./vllm-0.31

        atompin check ./LMCache ./vllm-0.33 --consumer-package lmcache --platform rocm

        atompin check /opt/atom --installed vllm --consumer-package atom.plugin.vllm --pair atom-0.1.5+vllm-0.31
    """
    from atompin.checking import open_cache, run_check
    from atompin.report import render_check

    try:
        with open_cache(cache_dir, no_cache) as cache:
            outcome = run_check(
                consumer,
                provider,
                package=package,
                consumer_package=consumer_package,
                installed=installed,
                consumer_installed=consumer_installed,
                site=site,
                pair=pair,
                manifest=manifest,
                lock_path=lock_path,
                relocations=relocations,
                baseline=baseline,
                provider_version=provider_version,
                cache=cache,
                platform=platform,
            )
    except AtompinError as err:
        _fail(err)
    for problem in outcome.pin_problems:
        typer.echo(f"FAIL  {problem}", err=True)
    sys.stdout.write(render_check(outcome.result, format.value, verbose=STATE.verbose))
    if outcome.result.errors and baseline is None and installed is None and format is CheckFormat.text:
        typer.echo(NO_BASELINE_HINT, err=True)
    raise typer.Exit(1 if outcome.result.errors or outcome.pin_problems else 0)


# Said after a failing check with no baseline: the drift rules cannot tell drift from code that
# never ran where the consumer works (`lock` takes the consumer's declared provider instead).
NO_BASELINE_HINT = (
    "hint: no --baseline was given, so a failure the consumer shares with the provider it was written "
    "for (code that does not run there, or was broken there already) counts as an error too; pass "
    "--baseline FOLDER with that provider's sources to tell drift from it (`atompin lock` takes the "
    "consumer's declared provider)"
)


@app.command()
def lock(
    pair: Annotated[
        list[str] | None,
        typer.Option("--pair", metavar="NAME", help="Lock only this pair (repeatable); others keep their entry."),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the cache only; fail clearly when something is not cached.")
    ] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="REF",
            help="Provider ref the consumer was written against, for the drift rules, version gates and relocated "
            "signatures (default: the consumer's declared target, else the pair's provider in the previous lock).",
        ),
    ] = None,
    format: Annotated[
        CheckFormat, typer.Option("--format", help="How to print the result (the lock file is TOML either way).")
    ] = CheckFormat.text,
    check_only: Annotated[
        bool,
        typer.Option(
            "--check",
            "--locked",
            help="Write nothing; exit 1 when the lock on disk is not byte-identical to what lock would write.",
        ),
    ] = False,
) -> None:
    """Resolve every pair of pairs.toml through git, check each declared edge, and write atompin.lock.

    The lock is written even when a gated pair fails (exit 1), so the PR shows the
    failing verdict. Exit 2 on bad input, 3 on git or network failure (nothing written).

    Example:

        atompin lock --pair atom-0.1.9+vllm-0.33
    """
    from atompin.locking import lock_manifest, relock
    from atompin.report import render_lock

    quiet = quiet or STATE.quiet
    if check_only:
        try:
            with _progress(quiet) as progress:
                checked = relock(manifest, lock_path, pair, cache_dir, offline, progress, baseline)
        except AtompinError as err:
            _fail(err)
        for line in checked.differences:
            typer.echo(f"FAIL  {line}", err=True)
        if checked.current and not quiet:
            typer.echo(f"{checked.path}: up to date")
        raise typer.Exit(0 if checked.current else 1)
    try:
        with _progress(quiet) as progress:
            run = lock_manifest(manifest, lock_path, pair, cache_dir, offline, progress, baseline)
    except AtompinError as err:
        _fail(err)
    if not quiet:
        sys.stdout.write(render_lock(run.lock, format.value, str(manifest), show_info=STATE.verbose))
        typer.echo(f"{run.path}: {'unchanged' if run.current else 'written'}", err=format is not CheckFormat.text)
    judged = [p for p in run.lock.pairs if not pair or p.name in pair]
    raise typer.Exit(1 if any(p.gated_failures() for p in judged) else 0)


@app.command()
def verify(
    remote: Annotated[
        bool, typer.Option("--remote", help="Also check that every locked tag still points at its commit.")
    ] = False,
    bake: Annotated[
        list[Path] | None,
        typer.Option(
            "--bake",
            metavar="PATH",
            help="A bake file (HCL or JSON) whose pin variables must match the lock (repeatable).",
        ),
    ] = None,
    pair: Annotated[
        str | None,
        typer.Option("--pair", metavar="NAME", help="The pair the bake files build (default: the only pair)."),
    ] = None,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    installed: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="An installed distribution (e.g. vllm) that must be the pair's pin, checked statically against the consumer.",
        ),
    ] = None,
    consumer: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="With --installed: the consumer's source folder (default: the consumer's installed distribution).",
        ),
    ] = None,
    site: SiteOpt = None,
    recheck: Annotated[
        bool,
        typer.Option(
            "--recheck", help="Also re-resolve and re-check every pair; the lock must come out byte-identical."
        ),
    ] = False,
) -> None:
    """Gate CI and image builds on the lock: it is current, and every gated verdict passes.

    Offline by default: the lock must re-derive from pairs.toml and its own findings.
    --recheck re-runs the lock (cheap with a warm cache) and requires identical bytes.
    Exit 0 pass, 1 fail (stale lock, failing verdict, moved tag, bake mismatch),
    2 bad input, 3 git or network failure.

    Example:

        atompin verify --bake docker/rocm-bake.hcl --pair atom-0.1.9+vllm-0.33

        atompin verify --installed vllm --pair atom-0.1.9+vllm-0.33   (inside the image)
    """
    from atompin.verify import run_verify

    try:
        with _progress() as progress:
            report = run_verify(
                manifest,
                lock_path,
                remote=remote,
                bake=bake,
                pair=pair,
                installed=installed,
                consumer=consumer,
                site=site,
                cache_dir=cache_dir,
                progress=progress,
                recheck=recheck,
            )
    except AtompinError as err:
        _fail(err)
    # One stream, one row per line, in order: passes, warnings, failures.
    for line in [] if STATE.quiet else report.passes:
        typer.echo(f"ok    {line}")
    for line in report.warnings:
        typer.echo(f"warn  {line}")
    for line in report.failures:
        typer.echo(f"FAIL  {line}")
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def diff(
    old: Annotated[
        Path | None, typer.Argument(metavar="OLD", help="The old lock (default: the lock at git HEAD, or --base).")
    ] = None,
    new: Annotated[
        Path | None, typer.Argument(metavar="NEW", help="The new lock (default: the working tree's).")
    ] = None,
    base: Annotated[
        str, typer.Option("--base", metavar="REV", help="The git revision the default OLD is read at.")
    ] = "HEAD",
    format: Annotated[
        DiffFormat, typer.Option("--format", help="text, markdown (for a PR comment) or json.")
    ] = DiffFormat.text,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    allow_stale: AllowStaleOpt = False,
) -> None:
    """Compare two locks: pins, verdicts, findings that appeared or were resolved, counts.

    Exit 1 when a gated verdict got worse, so a CI job can fail on it, or when the
    default NEW lock is stale (pairs.toml or a relocation table changed since it
    was written; run `atompin lock`, or pass --allow-stale).

    Example:

        atompin diff --base origin/main --format markdown > comment.md
    """
    from atompin import lockfile
    from atompin.lockdiff import diff_files
    from atompin.verify import require_current_file

    try:
        new_lock = new or lock_path or lockfile.default_path(manifest)
        if new is None and not allow_stale:
            require_current_file(manifest, new_lock)
        result = diff_files(old, new_lock, base, manifest.resolve().parent, cache_dir)
    except AtompinError as err:
        _fail(err)
    _print_diff(result, format)
    raise typer.Exit(1 if result.worse else 0)


@app.command()
def bump(
    component: Annotated[
        str, typer.Argument(metavar="COMPONENT", help="The component to re-pin (a key of [components]).")
    ],
    ref: Annotated[
        str | None, typer.Argument(metavar="REF", help="The new ref: a tag, branch or commit (omit with --latest).")
    ] = None,
    pair: Annotated[
        list[str] | None,
        typer.Option(
            "--pair", metavar="NAME", help="Only this pair (repeatable; default: every pair that pins COMPONENT)."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing; show what would change.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Use the cache only.")] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    format: Annotated[DiffFormat, typer.Option("--format", help="How to print the lock diff.")] = DiffFormat.text,
    latest: Annotated[
        bool,
        typer.Option("--latest", help="Search for REF: the newest candidate at which every gated verdict passes."),
    ] = False,
    match: Annotated[
        str | None,
        typer.Option("--match", metavar="GLOB", help="With --latest: only tags matching this glob (default: every release tag)."),
    ] = None,
    pre: Annotated[bool, typer.Option("--pre", help="With --latest: pre-release tags are candidates too.")] = False,
    branch: Annotated[
        str | None,
        typer.Option("--branch", metavar="NAME", help="With --latest: the candidates are this branch's commits, not tags."),
    ] = None,
    rename: Annotated[
        bool,
        typer.Option(
            "--rename", help="Rename pairs whose name carries COMPONENT's old version (vllm-0.31 -> vllm-0.33)."
        ),
    ] = False,
) -> None:
    """Re-pin COMPONENT to REF in pairs.toml (comments and layout kept), re-lock the
    affected pairs, and print what changed. With --latest, REF is searched for:
    candidates newer than the current pin (by version; committed after it where
    its tree says no version), from the newest, until every gated verdict
    passes; a table shows each candidate tried. A pair whose name carries
    the old version is offered a new name; --rename applies it.

    Exit 1 when a gated verdict got worse (with --latest: when no candidate passes;
    nothing is pinned); 2 on bad input; 3 on git failure (nothing written).

    Example:

        atompin bump vllm v0.33.0 --dry-run

        atompin bump vllm --latest --match 'v0.3*' --dry-run

        atompin bump vllm v0.33.0 --pair atom-0.1.5+vllm-0.31 --rename
    """
    if latest:
        if ref is not None:
            _fail(InputError(f"give REF or --latest, not both (REF {ref!r})"))
        if rename:
            _fail(InputError("--rename needs the new REF: find it with --latest, then bump to it with --rename"))
        _bump_latest(component, match, pre, branch, pair, dry_run, offline, manifest, lock_path, cache_dir, format)
    if ref is None or match is not None or pre or branch is not None:
        _fail(InputError("give the new REF, or --latest to search for it (--match, --pre and --branch need --latest)"))
    from atompin.bumping import plan_bump

    try:
        with _progress() as progress:
            plan = plan_bump(
                manifest,
                component,
                ref,
                pairs=pair,
                lock_path=lock_path,
                cache_dir=cache_dir,
                offline=offline,
                progress=progress,
                rename=rename,
            )
    except AtompinError as err:
        _fail(err)
    for old_name, new_name in plan.renames.items():
        if plan.renamed:
            typer.echo(f"renamed pair {old_name!r} to {new_name!r}", err=True)
        else:
            typer.echo(
                f"pair {old_name!r} names {component}'s old version but will pin {ref}; "
                f"rerun with --rename to call it {new_name!r}",
                err=True,
            )
    if plan.diff is None:
        typer.echo(f"{manifest}: every selected pair already pins {component} = {ref!r}; nothing to do")
        raise typer.Exit(0)
    typer.echo(plan.manifest_patch(), err=format is not DiffFormat.text)
    _print_diff(plan.diff, format)
    if dry_run:
        typer.echo("dry run: nothing written", err=True)
    else:
        plan.write()
        typer.echo(f"{manifest} and {plan.lock_path}: written ({', '.join(plan.changed)})", err=True)
    raise typer.Exit(1 if plan.diff.worse else 0)


def _bump_latest(
    component: str,
    match: str | None,
    pre: bool,
    branch: str | None,
    pair: list[str] | None,
    dry_run: bool,
    offline: bool,
    manifest: Path,
    lock_path: Path | None,
    cache_dir: Path | None,
    format: DiffFormat,
) -> NoReturn:
    """`bump --latest`: search, print the candidates tried, then pin like `bump` (or not)."""
    from atompin.report.resolving import render_latest
    from atompin.resolving import find_latest

    try:
        with _progress() as progress:
            search = find_latest(
                manifest,
                component,
                match=match,
                pre=pre,
                branch=branch,
                pairs=pair,
                lock_path=lock_path,
                cache_dir=cache_dir,
                offline=offline,
                progress=progress,
            )
    except AtompinError as err:
        _fail(err)
    typer.echo(render_latest(search), nl=False, err=format is not DiffFormat.text)
    plan = search.plan
    if plan is None or plan.diff is None:
        raise typer.Exit(0 if search.chosen is not None or not search.trials else 1)
    typer.echo(plan.manifest_patch(), err=format is not DiffFormat.text)
    _print_diff(plan.diff, format)
    if dry_run:
        typer.echo("dry run: nothing written", err=True)
    else:
        plan.write()
        typer.echo(f"{manifest} and {plan.lock_path}: written ({', '.join(plan.changed)})", err=True)
    raise typer.Exit(0)


@app.command()
def bisect(
    component: Annotated[str, typer.Argument(help="The component whose history is searched (e.g. vllm).")],
    good: Annotated[str, typer.Argument(help="A ref where the pairs are as they should be (e.g. the current pin).")],
    bad: Annotated[str, typer.Argument(help="A later ref where a finding that fails a gate has appeared.")],
    pair: Annotated[
        list[str] | None,
        typer.Option("--pair", metavar="NAME", help="Only this pair (repeatable; default: every pair that pins COMPONENT)."),
    ] = None,
    format: Annotated[
        DiffFormat, typer.Option("--format", help="text, json, or markdown (for a PR or an upstream bug report).")
    ] = DiffFormat.text,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the cache only; exit 3 when it lacks the range's history.")
    ] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    cache_dir: CacheOpt = None,
) -> None:
    """Find the first commit from GOOD to BAD at which a finding that fails a gate appears.

    Binary search over the first-parent commits after GOOD up to BAD, each judged as
    `atompin lock` would judge the pair pinned there. Prints that commit (id, date,
    subject), the findings that appeared, and for each the files the commit changed
    that hold its symbol. The history is fetched as a blob-filtered partial clone of
    the range. Nothing is written.

    Exit 1 when a worse commit was found, 0 when BAD is not worse than GOOD, 2 on bad
    input, 3 on git failure (or, offline, when the cache lacks the history).

    Example:

        atompin bisect vllm v0.31.0 v0.33.0 --format markdown > bisect.md
    """
    from atompin.bisecting import bisect as run_bisect
    from atompin.report.resolving import render_bisect

    try:
        with _progress() as progress:
            result = run_bisect(
                manifest, component, good, bad, pairs=pair, cache_dir=cache_dir, offline=offline, progress=progress
            )
    except AtompinError as err:
        _fail(err)
    sys.stdout.write(render_bisect(result, format.value))
    raise typer.Exit(1 if result.culprit is not None else 0)


@app.command()
def export(
    pair: Annotated[
        str | None, typer.Option("--pair", metavar="NAME", help="The pair to export (default: the only pair).")
    ] = None,
    format: Annotated[
        ExportFormat, typer.Option("--format", help="bake (JSON override file), env, github, json.")
    ] = ExportFormat.bake,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="PATH", help="Write here (atomically) instead of stdout.")
    ] = None,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    allow_stale: AllowStaleOpt = False,
) -> None:
    """Export a locked pair's pins for a build: a bake override, env lines, GitHub outputs or JSON.

    Variable names default to <COMPONENT>_REPO, _REF, _COMMIT, _VERSION (renamable per
    component in pairs.toml), plus ATOMPIN_PAIR, ATOMPIN_PAIR_TAG (the pair name as a valid
    image tag) and ATOMPIN_VERDICT. A stale lock (pairs.toml or a relocation table changed
    since `atompin lock`) is refused with exit 1 unless --allow-stale.

    Example:

        atompin export --pair atom-0.1.9+vllm-0.33 --format bake -o atompin.bake.json
        docker buildx bake -f docker-bake.hcl -f atompin.bake.json
    """
    from atompin.report.export import export_pair, write_export

    try:
        text = export_pair(manifest, lock_path, pair, format.value, allow_stale)
        if output:
            write_export(output, format.value, text)
        else:
            sys.stdout.write(text)
    except AtompinError as err:
        _fail(err)


relocations_app = _App(help="Relocation tables: where provider symbols moved between releases.", no_args_is_help=True)
app.add_typer(relocations_app, name="relocations")


@relocations_app.command("suggest")
def relocations_suggest(
    source: Annotated[
        str, typer.Argument(metavar="SOURCE", help="The provider's git repository (URL or path); '-' with two folders.")
    ],
    old: Annotated[
        str, typer.Argument(metavar="OLD", help="The old release: a ref (tag, branch, commit) or a source folder.")
    ],
    new: Annotated[str, typer.Argument(metavar="NEW", help="The new release: a ref or a source folder.")],
    consumer: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="A consumer source folder: only the symbols it uses are considered (default: every definition).",
        ),
    ] = None,
    consumer_package: Annotated[str | None, typer.Option(metavar="NAME", help="The consumer package to scan.")] = None,
    package: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The provider's import name (default: the single top-level package)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="PATH", help="Write the draft here (atomically) instead of stdout."),
    ] = None,
    offline: Annotated[bool, typer.Option("--offline", help="Use the git cache only.")] = False,
    cache_dir: CacheOpt = None,
) -> None:
    """Draft a relocation table: for each symbol at OLD that is gone at NEW, where did it go?

    Candidates are ranked (same name in another module, same class elsewhere, a new
    name with the same parameters) and printed in the relocations/ format with the
    parameters at the new place and a note on each signature change. Review it
    against the sources before committing it. When OLD and NEW are folders they are
    read as source trees; otherwise SOURCE is a git repository and OLD and NEW are refs.

    Example:

        atompin relocations suggest https://github.com/vllm-project/vllm v0.31.0 v0.33.0 --consumer ./ATOM --consumer-package atom.plugin.vllm
    """
    from atompin.checking import suggest_relocations
    from atompin.files import write_atomically
    from atompin.relocations import render_draft

    try:
        with _progress() as progress:
            draft = suggest_relocations(
                source,
                old,
                new,
                consumer=consumer,
                consumer_package=consumer_package,
                package=package,
                cache_dir=cache_dir,
                offline=offline,
                progress=progress,
            )
    except AtompinError as err:
        _fail(err)
    header = [
        f"Draft relocation table for {draft.package}: {old} -> {new}, made by `atompin relocations suggest`.",
        "Review every entry against the provider's sources before committing it.",
    ]
    text = render_draft(draft.package, f">={draft.version}", draft.entries, draft.removed, header)
    if output:
        write_atomically(output, text)
        typer.echo(
            f"{output}: {len(draft.entries)} entries, {len(draft.removed)} removed without a candidate", err=True
        )
    else:
        sys.stdout.write(text)


@app.command()
def doctor(
    consumer: Annotated[
        str, typer.Argument(metavar="CONSUMER", help="The consumer's installed distribution (e.g. atom).")
    ],
    provider: Annotated[str, typer.Option("--provider", metavar="NAME", help="The provider's import name.")] = "vllm",
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            metavar="GROUP",
            help="Entry-point group the host loads (repeatable; default: vllm.platform_plugins, vllm.general_plugins).",
        ),
    ] = None,
    consumer_package: Annotated[
        str | None, typer.Option(metavar="NAME", help="The consumer package to scan for patch sites.")
    ] = None,
    site: SiteOpt = None,
    format: Annotated[TextOrJson, typer.Option("--format", help="text or json.")] = TextOrJson.text,
) -> None:
    """The runtime half. WARNING: this is the one command that IMPORTS AND RUNS CODE.

    Run it deliberately, in a live environment with the whole stack installed (on
    a supported GPU for real use). It finds the consumer's patch sites statically,
    records every patched provider attribute, loads the consumer's entry points in
    the host's plugin groups and calls them as the host does (each isolated), then
    prints one row per patch: installed, stood down (with the reason), or raised;
    plus a row per entry point that failed. Exit 1 when a patch did not install and
    nothing explains why, or an entry point failed.

    Example:

        atompin doctor atom --provider vllm --consumer-package atom.plugin.vllm --format json
    """
    import json

    from atompin.doctor import render_text, run_installed_doctor

    try:
        report = run_installed_doctor(consumer, provider, group, consumer_package, site)
    except AtompinError as err:
        _fail(err)
    if format is TextOrJson.json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(report))
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def demo() -> None:
    """Run the built-in example offline: a miniature provider with two releases and a
    plugin that shows the loud and the silent failure modes.

    Example:

        atompin demo
    """
    from atompin.demo import run_demo

    raise typer.Exit(run_demo(typer.echo))


def main() -> None:
    """The console script: no Python traceback unless --debug."""
    try:
        app()  # standalone: usage errors exit 2 with the usage line, typer.Exit keeps its status
    except KeyboardInterrupt:
        typer.echo("atompin: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # an unexpected failure is a bug: one line unless --debug
        if STATE.debug:
            raise
        typer.echo(
            f"atompin: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", err=True
        )
        sys.exit(4)
