"""The command line: a thin typer layer over the pipeline.

Exit statuses (everywhere): 0 pass, 1 findings that fail the gate,
2 bad input, 3 git or network failure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from atompin import __version__
from atompin.errors import AtompinError

if TYPE_CHECKING:
    from atompin.lockdiff import LockDiff

app = typer.Typer(
    name="atompin",
    help="Keep a ROCm inference stack's pins honest: ATOM <-> vLLM <-> aiter.\n\n"
    "Exit statuses: 0 pass, 1 findings fail the gate, 2 bad input, 3 git or network failure.",
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


class _State:
    """Options of the root command that every command honours."""

    verbose = False
    debug = False


STATE = _State()


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
) -> None:
    """atompin: pinned pairs, checked statically, locked. Colour follows NO_COLOR."""
    STATE.verbose = verbose
    STATE.debug = debug


# -- shared options ---------------------------------------------------------------

SiteOpt = Annotated[
    list[str] | None,
    typer.Option("--site", help="Where to look for installed distributions (repeatable; default: sys.path)."),
]
ManifestOpt = Annotated[Path, typer.Option("--manifest", help="The pairs manifest.")]
LockOpt = Annotated[
    Path | None, typer.Option("--lock", help="The lock file (default: atompin.lock beside the manifest).")
]
CacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Cache folder for git repositories and indexes (default: $ATOMPIN_CACHE_DIR or the per-user cache dir).",
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
            help="Folder that holds the consumer's package folder (e.g. an ATOM checkout), or with --consumer-installed a distribution name."
        ),
    ],
    provider: Annotated[
        Path | None,
        typer.Argument(
            help="Folder that holds the provider's package folder (e.g. a vLLM checkout); omit with --installed."
        ),
    ] = None,
    package: Annotated[
        str | None, typer.Option(help="Provider import name (default: the single top-level package).")
    ] = None,
    consumer_package: Annotated[
        str | None,
        typer.Option(help="Consumer package to scan, dotted names allowed (default: every top-level package)."),
    ] = None,
    format: Annotated[CheckFormat, typer.Option("--format", help="Output format.")] = CheckFormat.text,
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Index cache folder (default: $ATOMPIN_CACHE_DIR or the per-user cache dir)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the index cache.")] = False,
    relocations: Annotated[
        Path | None,
        typer.Option(
            help="A relocation table, or a folder of them (<folder>/<package>/*.toml, chosen by provider version)."
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="The provider the consumer was written against (a source folder): signatures of moved symbols are compared with it, and the drift rules say what changed since."
        ),
    ] = None,
    provider_version: Annotated[
        str | None,
        typer.Option(help="The provider's version for choosing tables (default: read from its version file)."),
    ] = None,
    installed: Annotated[
        str | None,
        typer.Option(
            help="Check against this installed distribution (found through its metadata, never imported) instead of PROVIDER."
        ),
    ] = None,
    consumer_installed: Annotated[
        bool, typer.Option("--consumer-installed", help="CONSUMER names an installed distribution.")
    ] = False,
    site: SiteOpt = None,
    pair: Annotated[
        str | None,
        typer.Option(
            "--pair", help="With --installed: also confirm the installed version and commit are this locked pair's pin."
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
            )
    except AtompinError as err:
        _fail(err)
    for problem in outcome.pin_problems:
        typer.echo(f"FAIL  {problem}", err=True)
    sys.stdout.write(render_check(outcome.result, format.value, verbose=STATE.verbose))
    raise typer.Exit(1 if outcome.result.errors or outcome.pin_problems else 0)


@app.command()
def lock(
    pair: Annotated[
        list[str] | None, typer.Option("--pair", help="Lock only this pair (repeatable); others keep their entry.")
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
            help="Provider ref the consumer was written against, for the drift rules and relocated signatures "
            "(default: the consumer's declared target, else the pair's provider in the previous lock).",
        ),
    ] = None,
    format: Annotated[
        CheckFormat, typer.Option("--format", help="How to print the result (the lock file is TOML either way).")
    ] = CheckFormat.text,
) -> None:
    """Resolve every pair of pairs.toml through git, check each declared edge, and write atompin.lock.

    The lock is written even when a gated pair fails (exit 1), so the PR shows the
    failing verdict. Exit 2 on bad input, 3 on git or network failure (nothing written).

    Example:

        atompin lock --pair atom-0.1.9+vllm-0.33
    """
    from atompin.locking import lock_manifest
    from atompin.report import render_lock

    try:
        with _progress(quiet) as progress:
            run = lock_manifest(manifest, lock_path, pair, cache_dir, offline, progress, baseline)
    except AtompinError as err:
        _fail(err)
    if not quiet:
        sys.stdout.write(render_lock(run.lock, format.value, manifest.name, show_info=STATE.verbose))
        typer.echo(f"{run.path}: {'written' if run.written else 'unchanged'}", err=format is not CheckFormat.text)
    judged = [p for p in run.lock.pairs if not pair or p.name in pair]
    raise typer.Exit(1 if any(p.gated_failures() for p in judged) else 0)


@app.command()
def verify(
    remote: Annotated[
        bool, typer.Option("--remote", help="Also check that every locked tag still points at its commit.")
    ] = False,
    bake: Annotated[
        list[Path] | None,
        typer.Option("--bake", help="A bake file (HCL or JSON) whose pin variables must match the lock (repeatable)."),
    ] = None,
    pair: Annotated[
        str | None, typer.Option("--pair", help="The pair the bake files build (default: the only pair).")
    ] = None,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    installed: Annotated[
        str | None,
        typer.Option(
            help="An installed distribution (e.g. vllm) that must be the pair's pin, checked statically against the consumer."
        ),
    ] = None,
    consumer: Annotated[
        Path | None,
        typer.Option(
            help="With --installed: the consumer's source folder (default: the consumer's installed distribution)."
        ),
    ] = None,
    site: SiteOpt = None,
) -> None:
    """Gate CI and image builds on the lock: it is current, and every gated verdict passes.

    Offline by default. Exit 0 pass, 1 fail (stale lock, failing verdict, moved tag,
    bake mismatch), 2 bad input, 3 git or network failure.

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
            )
    except AtompinError as err:
        _fail(err)
    for line in report.passes:
        typer.echo(f"ok    {line}")
    for line in report.warnings:
        typer.echo(f"warn  {line}", err=True)
    for line in report.failures:
        typer.echo(f"FAIL  {line}", err=True)
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def diff(
    old: Annotated[Path | None, typer.Argument(help="The old lock (default: the lock at git HEAD, or --base).")] = None,
    new: Annotated[Path | None, typer.Argument(help="The new lock (default: the working tree's).")] = None,
    base: Annotated[str, typer.Option("--base", help="The git revision the default OLD is read at.")] = "HEAD",
    format: Annotated[
        DiffFormat, typer.Option("--format", help="text, markdown (for a PR comment) or json.")
    ] = DiffFormat.text,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Compare two locks: pins, verdicts, findings that appeared or were resolved, counts.

    Exit 1 when a gated verdict got worse, so a CI job can fail on it.

    Example:

        atompin diff --base origin/main --format markdown > comment.md
    """
    from atompin import lockfile
    from atompin.lockdiff import diff_files

    try:
        result = diff_files(
            old, new or lock_path or lockfile.default_path(manifest), base, manifest.resolve().parent, cache_dir
        )
    except AtompinError as err:
        _fail(err)
    _print_diff(result, format)
    raise typer.Exit(1 if result.worse else 0)


@app.command()
def bump(
    component: Annotated[str, typer.Argument(help="The component to re-pin (a key of [components]).")],
    ref: Annotated[str, typer.Argument(help="The new ref: a tag, branch or commit.")],
    pair: Annotated[
        list[str] | None,
        typer.Option("--pair", help="Only this pair (repeatable; default: every pair that pins COMPONENT)."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write nothing; show what would change.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Use the cache only.")] = False,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
    cache_dir: CacheOpt = None,
    format: Annotated[DiffFormat, typer.Option("--format", help="How to print the lock diff.")] = DiffFormat.text,
) -> None:
    """Re-pin COMPONENT to REF in pairs.toml (comments and layout kept), re-lock the
    affected pairs, and print what changed.

    Exit 1 when a gated verdict got worse; 2 on bad input; 3 on git failure (nothing written).

    Example:

        atompin bump vllm v0.33.0 --dry-run
    """
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
            )
    except AtompinError as err:
        _fail(err)
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


@app.command()
def export(
    pair: Annotated[str | None, typer.Option("--pair", help="The pair to export (default: the only pair).")] = None,
    format: Annotated[
        ExportFormat, typer.Option("--format", help="bake (JSON override file), env, github, json.")
    ] = ExportFormat.bake,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (atomically) instead of stdout.")
    ] = None,
    manifest: ManifestOpt = Path("pairs.toml"),
    lock_path: LockOpt = None,
) -> None:
    """Export a locked pair's pins for a build: a bake override, env lines, GitHub outputs or JSON.

    Variable names default to <COMPONENT>_REPO, _REF, _COMMIT, _VERSION (renamable per
    component in pairs.toml), plus ATOMPIN_PAIR and ATOMPIN_VERDICT.

    Example:

        atompin export --pair atom-0.1.9+vllm-0.33 --format bake -o atompin.bake.json
        docker buildx bake -f rocm-bake.hcl -f atompin.bake.json
    """
    from atompin.files import write_atomically
    from atompin.report.export import export_pair

    try:
        text = export_pair(manifest, lock_path, pair, format.value)
        if output:
            write_atomically(output, text)
        else:
            sys.stdout.write(text)
    except AtompinError as err:
        _fail(err)


relocations_app = typer.Typer(
    help="Relocation tables: where provider symbols moved between releases.", no_args_is_help=True
)
app.add_typer(relocations_app, name="relocations")


@relocations_app.command("suggest")
def relocations_suggest(
    source: Annotated[str, typer.Argument(help="The provider's git repository (URL or path); '-' with two folders.")],
    old: Annotated[str, typer.Argument(help="The old release: a ref (tag, branch, commit) or a source folder.")],
    new: Annotated[str, typer.Argument(help="The new release: a ref or a source folder.")],
    consumer: Annotated[
        Path | None,
        typer.Option(
            help="A consumer source folder: only the symbols it uses are considered (default: every definition)."
        ),
    ] = None,
    consumer_package: Annotated[str | None, typer.Option(help="The consumer package to scan.")] = None,
    package: Annotated[
        str | None, typer.Option(help="The provider's import name (default: the single top-level package).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the draft here (atomically) instead of stdout.")
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
    consumer: Annotated[str, typer.Argument(help="The consumer's installed distribution (e.g. atom).")],
    provider: Annotated[str, typer.Option("--provider", help="The provider's import name.")] = "vllm",
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="Entry-point group the host loads (repeatable; default: vllm.platform_plugins, vllm.general_plugins).",
        ),
    ] = None,
    consumer_package: Annotated[str | None, typer.Option(help="The consumer package to scan for patch sites.")] = None,
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
