"""The `conformance` command: list, run, serve, replay, selftest.

Exit codes (exits.py, EXIT_CODES): 0 every gating requirement held, 1 a
requirement failed, 2 usage or configuration error, 3 the target could not be
reached, stopped answering or was too slow to finish, 4 internal error, 130 interrupted."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Start-up: `conformance list` and `--help` load no profile and import neither the run's
# modules nor its libraries (hypothesis, httpx, jsonschema, pytest), so this module imports
# only leaves at its top; each command imports what it uses inside its function.
from conformance import __version__
from conformance.catalog import available, draft_of, profile_path, read_settings
from conformance.exits import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from conformance.paths import DATA_ROOT, RUN_INI

EPILOG = "exit codes:\n" + "\n".join(f"  {code:3}  {what}" for code, what in EXIT_CODES.items())


def _limits() -> str:
    from conformance.budgets import BUDGETS
    from conformance.transport.http import DEAD_AFTER, DEFAULT_MAX_ANSWER, DEFAULT_TIMEOUT

    budgets = ", ".join(f"{b.name} {b.max_time / 60:g}m" for b in BUDGETS.values())
    return f"""

limits (a run always ends):
  each exchange (connect, headers, body) has a wall-clock deadline: config `timeout`, \
default {DEFAULT_TIMEOUT:g} s;
  an answer is read up to config `max_answer_mib` \
(default {DEFAULT_MAX_ANSWER / 2**20:g} MiB, decompressed), then cut;
  after {DEAD_AFTER} exchanges in a row without an answer the target counts as gone: \
the rest is untested, exit 3;
  --max-time bounds the whole run (default per budget: {budgets});
  redirects are never followed; Ctrl-C or SIGTERM writes the reports of what has run (exit 130)."""


# a few words for each key of a run config (the README's table says each in full); a key the
# config reader knows and this does not is still listed
CONFIG_WORDS = {
    "target": "the target's URL", "timeout": "seconds per exchange", "max_answer_mib": "the largest answer",
    "credentials": "label -> token or mapping", "control": "URL of a control interface",
    "world": "role -> id of the target's seeded objects",
    "declared": "optional features the deployment does not offer",
    "examples": "a folder or redis:// URL of hypothesis examples shared by every worker and machine",
    "scenarios": "outcome -> the message that drives the agent there",
    "keys": "public keys trusted for the target's signatures",
    "receiver": "the URL a target elsewhere calls to reach the run's webhook receiver",
}


def config_help() -> str:
    """--config's help: every key the config reader knows (conformance/run/config.py KNOWN_KEYS)."""
    from conformance.run.config import KNOWN_KEYS

    order = list(CONFIG_WORDS)
    keys = sorted(KNOWN_KEYS, key=lambda k: (order.index(k) if k in order else len(order), k))
    return "YAML run config, keys: " + "; ".join(
        f"{k} ({CONFIG_WORDS[k]})" if k in CONFIG_WORDS else k for k in keys)


FUZZ_USAGE = """conformance fuzz PROFILE --for DURATION [--target URL] [--config FILE] [--binding NAME]
                        [--baseline FILE] [--workers N] [--shard I/N] [--report DIR] [options]
       conformance fuzz merge DIR... [--report DIR] [--level LEVEL]"""


COMMAND_HELP = {  # a line each: `conformance --help` lists them
    "list": "list profiles, or one profile's requirements and faults",
    "run": "run a profile's requirements against a target",
    "fuzz": "a long campaign: keep generating past the budgets, write each new failure at once "
            "(`fuzz merge DIR...` joins the reports of a campaign's shards)",
    "serve": "serve a profile's reference implementation over HTTP",
    "replay": "send a saved case again and judge it with the same requirement",
    "baseline": "baseline files for CI gates",
    "diff": "requirements that started or stopped failing between two runs (markdown; "
            "exit 1 on a regression)",
    "selftest": "prove every requirement passes the clean reference and catches its faults",
}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. Only ``command``'s own arguments are added (every command's when
    None): the others are listed with their line of help, so that `conformance list` and
    `conformance --help` build nothing another command needs to explain itself (a run's
    limits, the config's keys)."""
    p = argparse.ArgumentParser(
        prog="conformance",
        description="Conformance test suite and fuzzer for agent-to-agent protocols.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"conformance {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMAND_HELP.items():
        if command in (None, name):
            COMMAND_PARSERS[name](sub)
        else:
            sub.add_parser(name, help=summary)
    return p


def _list_parser(sub: Any) -> None:
    s = sub.add_parser("list", help=COMMAND_HELP["list"])
    s.add_argument("profile", nargs="?", help="profile name (omit to list all profiles)")
    s.add_argument("--coverage", action="store_true",
                   help="print the profile's statement map: every normative statement of "
                   "the spec, the requirements that check it (or why none can), and the coverage figures")
    s.add_argument("--seams", action="store_true",
                   help="print each method or attribute of the reference its faults and variants patch, "
                   "with the faults that patch it (checked when the profile loads)")


def _run_parser(sub: Any) -> None:
    from conformance.run.options import add_run_options

    s = sub.add_parser("run", help=COMMAND_HELP["run"], epilog=EPILOG + _limits(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("profile", help="profile name, e.g. bindu (see `conformance list`)")
    add_run_options(s.add_argument, helps={"--config": config_help()})  # options.py RUN_OPTIONS
    s.add_argument("--workers", type=worker_count, default=1, metavar="N",
                   help="run requirements in N processes (pytest-xdist; 'auto' = one per core; default 1). "
                        "Verdicts and cases are the same as a serial run's; "
                        "against a live target the profile's `alone:` requirements "
                        "(they change state others read) run last, one at a time")


def _fuzz_parser(sub: Any) -> None:
    from conformance.run.options import FUZZ_OPTIONS, add_run_options

    s = sub.add_parser("fuzz", help=COMMAND_HELP["fuzz"], usage=FUZZ_USAGE,
                       description="Keep generating past the budgets against a target.\n"
                                   "`conformance fuzz merge DIR...` joins the reports of a campaign's "
                                   "shards (`conformance fuzz merge --help`).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("profile", help="profile name, e.g. bindu")
    s.add_argument("--for", dest="duration", required=True, metavar="DURATION",
                   help="how long to keep generating: seconds, or 90s, 15m, 2h")
    add_run_options(s.add_argument, flags=FUZZ_OPTIONS, helps={  # options.py RUN_OPTIONS, as for `run`
        "--config": config_help() + " (as for `run`; its `examples` are shared by every worker)",
        "--seed": "first seed; worker k of W in round r (from 0) of shard I/N uses seed + (r*N + I)*W + k "
                  "(default 1)",
        "--level": "lowest level whose failure makes the exit code 1 (default must)",
        "--report": "where cases/ and fuzz.json go (default reports/<profile>-fuzz-<timestamp>)",
        "--only": "generate only for this requirement, an ID or a glob such as 'BINDU-PARAMS-*' (repeatable; "
                  "default every requirement)",
        "--binding": "a binding of the profile to fuzz (repeatable or comma-separated; 'all' for each of "
                     "them); default: each one the target declares, else the profile's first. Every round "
                     "runs over each",
        "--baseline": "YAML list of known failures (as for `run`): a failure it lists is reported as a KNOWN "
                      "FAILURE, not a NEW FAILURE, and does not make the exit code 1",
        "--junit": "JUnit XML of what the campaign found (default <report>/junit.xml; report.html beside "
                   "fuzz.json)",
    })
    s.add_argument("--workers", type=worker_count, default=1, metavar="N",
                   help="processes generating side by side, each with its own seeds "
                        "('auto' = one per core; default 1)")
    s.add_argument("--progress", type=progress_seconds, default=10.0, metavar="SECONDS",
                   help="seconds between progress lines (exchanges, exchanges/s, failures so far), 0.5 to 10 "
                        "(default 10)")
    s.add_argument("--shard", type=shard_of, default=None, metavar="I/N",
                   help="this machine's part of a campaign of N machines (I from 0): its seeds are drawn by "
                        "no other shard (give every shard the same --seed and --workers); 'N' alone takes I "
                        "from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job). Join the shards' reports "
                        "with `conformance fuzz merge DIR...`")


def _serve_parser(sub: Any) -> None:
    s = sub.add_parser("serve", help=COMMAND_HELP["serve"])
    s.add_argument("profile")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=port_number, default=3773, help="port, 1-65535 (default 3773)")
    s.add_argument("--fault", action="append", default=[], metavar="NAME",
                   help="serve with this named fault or variant (repeatable)")
    s.add_argument("--control", action="store_true",
                   help="enable the control interface under /_control (off by default)")
    s.add_argument("--control-port", type=port_number, default=None, metavar="PORT",
                   help="serve the control interface on this port of --host instead, and not on --port "
                        "(as an admin port beside a server is); implies --control")
    s.add_argument("--shapes", type=int, default=None, metavar="SEED",
                   help="serve the answers in a shape variant: keys the document does not name renamed, "
                        "wrapped or moved, the profile's error codes and messages changed, "
                        "as another faithful server might write them (see docs/architecture.md)")
    s.add_argument("--write-config", default=None, metavar="FILE",
                   help="write a run config (target, credentials, control) for this server to FILE")


def _replay_parser(sub: Any) -> None:
    s = sub.add_parser("replay", help=COMMAND_HELP["replay"])
    s.add_argument("case", help="case file (cases/<ID>.json in a report directory)")
    s.add_argument("--target", default=None, help="where to send it (default: the case's own target)")
    s.add_argument("--config", default=None, metavar="FILE", help=config_help())
    s.add_argument("--token", default=os.environ.get("CONFORMANCE_TOKEN"),
                   help="bearer token of the main caller (default $CONFORMANCE_TOKEN)")
    s.add_argument("--pytest", action="store_true",
                   help="print a standalone pytest file that replays the case "
                        "(target from CONFORMANCE_TARGET)")
    s.add_argument("--binding", default=None, metavar="NAME",
                   help="replay it over this binding of the profile (default: the binding the case was "
                        "found over)")
    s.add_argument("--quiet", action="store_true", help="print the verdict only, not each request sent")


def _baseline_parser(sub: Any) -> None:
    s = sub.add_parser("baseline", help=COMMAND_HELP["baseline"])
    s.add_argument("action", choices=["write"], help="write: the failures of a run as a starting baseline")
    s.add_argument("summary", help="summary.json of a run")
    s.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE instead of standard output")


def _diff_parser(sub: Any) -> None:
    s = sub.add_parser(
        "diff", help=COMMAND_HELP["diff"],
        description="Compare two summary.json files of the same profile: the requirements that started or "
                    "stopped failing, and the ones new or gone. A regression is a requirement of "
                    "both runs that is failed now and was not (passed, untested, blocked, skipped, "
                    "or an expected failure the baseline no longer covers); one newly expected_failure "
                    "(covered by a baseline) is not, nor is one only the new run has. Runs over several "
                    "bindings compare row by row (a requirement over one binding against itself over the "
                    "same binding). A differing spec or binding is a warning on stderr.",
        epilog="exit codes: 0 no regression; 1 a regression; 2 a file that is not a summary, "
               "or summaries of two different profiles")
    s.add_argument("old", help="summary.json of the earlier run")
    s.add_argument("new", help="summary.json of the later run")
    s.add_argument("--json", action="store_true", help="print the changes as JSON")
    s.add_argument("--binding", default=None, metavar="NAME",
                   help="compare only the rows of this binding (default: every binding, row by row)")


def _selftest_parser(sub: Any) -> None:
    s = sub.add_parser("selftest", help=COMMAND_HELP["selftest"])
    s.add_argument("profile", nargs="?", help="profile name (default: all)")
    s.add_argument("--budget", default="quick", choices=["quick", "standard", "deep"],
                   help="examples per property (default quick)")
    s.add_argument("--seed", type=int, default=1, help="hypothesis seed (default 1)")
    s.add_argument("--workers", type=worker_count, default="auto", metavar="N",
                   help="processes running the clean reference, faults and variants side by side "
                        "(default auto: one per core)")
    s.add_argument("--shape-seeds", default=None, metavar="LIST",
                   help="comma-separated seeds of the generated shape variants to run (default 1,2,3; "
                        "'none' runs none)")


COMMAND_PARSERS = {"list": _list_parser, "run": _run_parser, "fuzz": _fuzz_parser, "serve": _serve_parser,
                   "replay": _replay_parser, "baseline": _baseline_parser, "diff": _diff_parser,
                   "selftest": _selftest_parser}


def shape_seeds(text: str | None) -> tuple[int, ...] | None:
    """--shape-seeds: None (the default seeds), () for 'none', else the listed seeds."""
    if text is None:
        return None
    if text.strip().lower() == "none":
        return ()
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise SystemExit("conformance selftest: --shape-seeds takes comma-separated whole numbers or "
                         f"'none', not {text!r}") from None


def workers(value: int | str) -> int:
    """--workers as a number: 'auto' is one per core."""
    return (os.cpu_count() or 1) if value == "auto" else int(value)


def whole_number(what: str, low: int, high: int) -> Any:
    """An argparse type: a whole number from ``low`` to ``high``, named ``what`` in errors."""
    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is not a {what} ({low}-{high})")
        return number
    return parse


def worker_count(text: str) -> int | str:
    return text if text == "auto" else whole_number("number of workers (or auto)", 1, 64)(text)


port_number = whole_number("port number", 1, 65535)


def shard_of(text: str) -> tuple[int, int]:
    """An argparse type: ``I/N`` (0 <= I < N), or ``N`` with I from $JOB_COMPLETION_INDEX."""
    index_text, _, count_text = text.rpartition("/")
    if not index_text and "/" not in text:
        index_text = os.environ.get("JOB_COMPLETION_INDEX", "")
        if not index_text:
            raise argparse.ArgumentTypeError(f"{text!r}: give I/N, or N with $JOB_COMPLETION_INDEX set")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (e.g. 0/4)") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be 0 to N-1")
    return index, count


def progress_seconds(text: str) -> float:
    """An argparse type: seconds between a campaign's progress lines, 0.5 to 10."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.5 <= seconds <= 10:
        raise argparse.ArgumentTypeError(f"{text} is not between 0.5 and 10 seconds")
    return seconds


def cmd_list(args: argparse.Namespace) -> int:
    """The profiles, each as its YAML describes it (none is loaded: its counts are
    `conformance list PROFILE`'s last line); or one profile's requirements, faults and
    variants, or its statement map."""
    if not args.profile:
        for name in available():
            settings = read_settings(profile_path(name))
            draft = draft_of(settings)
            print(f"{name:16} {settings['spec']}  {settings.get('title', name)}"
                  + (f"  [draft: {draft}]" if draft else ""))
        print("\n`conformance list PROFILE`: its requirements, faults and variants; "
              "`--coverage`: its statement map; `--seams`: what its faults patch")
        return EXIT_OK
    from conformance.run.profiles import load_profile

    prof = load_profile(args.profile)
    if args.coverage:
        return print_coverage(prof)
    if args.seams:
        return print_seams(prof)
    for req in prof.requirements:
        print(f"{req.level:6} {req.id:40} {req.title}")
        print(f"{'':6} {'':40} source: {req.source}; faults: {', '.join(req.faults)}")
        if req.lasting:  # without control: only on identities the run made or the config marks disposable
            print(f"{'':6} {'':40} lasting: {req.lasting}")
        if req.applies:  # its guards: where they say no, the row is not applicable and never runs
            names = ", ".join(getattr(guard, "__name__", repr(guard)) for guard in req.applies)
            print(f"{'':6} {'':40} applies: {names}")
        use = prof.quota_use.get(req.id)
        if use:
            print(f"{'':6} {'':40} quota use: "
                  + "; ".join(f"{q} {n} ({who})" for q, per in use.items() for who, n in per.items()))
    for what, named in (("faults", prof.faults),
                        ("variants (allowed by the spec; no MUST may fail on one)", prof.variants)):
        print(f"\n{what} ({len(named)}):")
        for name, fn in sorted(named.items()):
            print(f"  {name:36} {(fn.__doc__ or '').strip().splitlines()[0] if fn.__doc__ else ''}")
    print(f"\n{prof.name}: {len(prof.requirements)} requirements, {len(prof.faults)} faults, "
          f"{len(prof.variants)} variants; {prof.spec_relpath}  {prof.title}"
          + (f"  [draft: {prof.draft}]" if prof.draft else ""))
    return EXIT_OK


def print_seams(prof: Any) -> int:
    """Each seam of the reference (``Class.attribute``) and the faults and variants that
    patch it; then those that change only the reference's data."""
    from conformance.kit.faults import seams
    from conformance.run.profiles import protocol_of, reference_class

    reference = reference_class(protocol_of(prof.settings["package"]))
    by_seam: dict[str, list[str]] = {}
    without: list[str] = []
    for kind, named in (("", prof.faults), ("variant ", prof.variants)):
        for name, patch in sorted(named.items()):
            found = seams(patch, reference)
            for seam in found:
                by_seam.setdefault(seam.name, []).append(kind + name)
            if not found:
                without.append(kind + name)
    for seam_name, patches in sorted(by_seam.items()):
        print(f"{seam_name:44} {', '.join(patches)}")
    if without:
        print(f"\nno method or attribute named (they change the reference's data): {', '.join(without)}")
    patching = len(prof.faults) + len(prof.variants) - len(without)
    print(f"\n{prof.name}: {len(by_seam)} seams, patched by {patching} of its {len(prof.faults)} faults and "
          f"{len(prof.variants)} variants")
    return EXIT_OK


def print_coverage(prof: Any) -> int:
    from conformance.documents.statements import coverage, map_problems, mapped_rows

    known = {r.id for r in prof.requirements}
    for s in prof.statements:
        checked = (", ".join(s.checked_by) if s.checked_by else f"untestable: {s.untestable}" if s.untestable
                   else "NOT CHECKED")
        if s.checked_by and set(s.checked_by) <= set(s.later) and not known & set(s.checked_by):
            checked = f"deferred ({prof.deferred_until}): {checked}"
        print(f"{s.level:6} {s.id:34} {s.says}")
        print(f"{'':6} {'':34} at {s.at}; {checked}")
    cov = coverage(prof.statements, [r.id for r in prof.requirements])
    print(f"\n{'category':24} {'statements':>10} {'covered':>8} {'untestable':>10} {'deferred':>8}")
    for category, row in cov.by_category.items():
        print(f"{category:24} {row['statements']:>10} {row['covered']:>8} {row['untestable']:>10} "
              f"{row['deferred']:>8}")
    print(f"\n{prof.name}: {cov.covered} of {cov.testable} testable statements covered ({cov.percent}%); "
          f"{cov.untestable} untestable; {cov.deferred} deferred; {cov.statements} statements in all")
    for problem in map_problems(prof.statements, mapped_rows(prof.requirements),
                                [r.id for r in prof.requirements]):
        print(f"problem: {problem}")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """One run: every binding it speaks (those --binding names, else each the target declares,
    else the profile's first) in one process, with one stop signal and one set of reports."""
    from conformance.run.profiles import load_profile

    load_profile(args.profile)  # surface spec errors as one line before pytest starts
    return run_once(args)


def run_once(args: argparse.Namespace) -> int:
    import pytest

    from conformance.drivers.plugin import GivenOptions, RunOutcome
    from conformance.run.options import RunOptions
    from conformance.run.profiles import load_profile

    path = profile_path(args.profile)
    prof = load_profile(args.profile)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report = Path(args.report or f"reports/{args.profile}-{stamp}")
    junit = Path(args.junit) if args.junit else report / "junit.xml"
    # every bad value as one line, before the run
    options = RunOptions.given(args, report=report, junit=junit).checked(prof)
    target = options.target or options.config.get("target")
    pytest_args = [
        str(path),
        "-c", str(RUN_INI),
        "--rootdir", str(DATA_ROOT),
        "-p", "no:terminal", "-p", "no:cacheprovider", "-s",
        # start-up: only the plugins a run uses, and no assertion rewriting of them (about 1 s)
        "--disable-plugin-autoload", "-p", "conformance.drivers.plugin", "-p", "allure_pytest.plugin",
        "--assert=plain",
        "--conformance-console",
        *options.pytest_args(),
        "--junitxml", str(junit), "-o", "junit_family=xunit1",
        "--alluredir", str(report / "allure-results"),
    ]
    if args.workers != 1:
        pytest_args += ["-p", "xdist.plugin", "-n", str(args.workers)]
    outcome = RunOutcome()
    code = pytest.main(pytest_args, plugins=[outcome, GivenOptions(options)])
    if outcome.code is not None:
        return outcome.code
    # pytest stopped before the run could finish: its own codes mean other things
    if code == pytest.ExitCode.INTERRUPTED:
        from conformance.drivers.plugin import reports_of_a_run_never_started

        reports_of_a_run_never_started(prof, report, "interrupted before the first requirement",
                                       target=target or "reference", seed=args.seed, budget=args.budget,
                                       gate=args.level,
                                       junit=junit)
        print(f"interrupted before the first requirement: nothing ran; {report / 'report.html'}",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if code == pytest.ExitCode.USAGE_ERROR:
        return EXIT_USAGE
    print(f"internal error: the run ended without a result (pytest exit code {int(code)})", file=sys.stderr)
    return EXIT_INTERNAL


def cmd_fuzz(args: argparse.Namespace) -> int:
    from conformance.drivers.fuzz import campaign
    from conformance.report.summary import gates
    from conformance.run.config import parse_duration, writable_dir
    from conformance.run.options import RunOptions
    from conformance.run.profiles import load_profile
    from conformance.run.targets import declared, run_bindings

    prof = load_profile(args.profile)
    seconds = parse_duration(args.duration, what="--for")
    opts = RunOptions.given(args).checked(prof)  # the shared options, checked as `run` checks them
    config, baseline = opts.config, opts.baseline
    target = opts.target or config.get("target") or "reference"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    report = writable_dir(opts.report or Path(f"reports/{prof.name}-fuzz-{stamp}"), "--report")
    junit = opts.junit or report / "junit.xml"
    writable_dir(junit.parent, "--junit folder")
    said = declared(prof, target, config, opts.faults)
    bindings = tuple(run_bindings(prof, opts.bindings, said))
    count = workers(args.workers)
    shard = args.shard or (0, 1)
    part = f", shard {shard[0]}/{shard[1]}" if args.shard else ""
    over = f" over {', '.join(str(b) for b in bindings)}" if any(bindings) else ""
    print(f"conformance fuzz: profile {prof.name} against {target}{over} for {seconds:g} s, "
          f"{count} worker(s), seeds from {opts.seed}{part}; new failures go to {report / 'cases'}",
          flush=True)
    result = campaign(prof.name, target, config, opts.token, seconds, report, seed=opts.seed, workers=count,
                      faults=opts.faults, out=lambda line: print(line, flush=True), every=args.progress,
                      shard=shard, only=opts.only, bindings=bindings, baseline=baseline, junit=junit,
                      level=opts.level)
    errors = (f", {len(result.kit_errors)} internal error(s) of conformance (bugs of the kit, not findings "
              "about the target: set CONFORMANCE_DEBUG=1 for the traceback and please report them)"
              if result.kit_errors else "")
    known = len(result.failures) - len(result.new_failures)
    listed = f" and {known} known (the baseline lists them)" if known else ""
    print(f"{len(result.new_failures)} distinct failure(s){listed}{errors}; {report / 'fuzz.json'}, "
          f"{report / 'report.html'}, JUnit {junit}")
    if result.replayed:
        print(f"{sum(result.replayed.values())} example(s) that other processes stored were replayed "
              "from the shared database (config examples)")
    if result.interrupted:
        print(f"{result.interrupted}: the campaign stopped early; fuzz.json holds what it found",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.unreachable:
        print(f"error: {result.unreachable}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if result.kit_errors:
        return EXIT_INTERNAL
    return EXIT_FAILED if any(gates(f.level, opts.level) for f in result.new_failures) else EXIT_OK


def merge_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="conformance fuzz merge", usage="conformance fuzz merge DIR... [--report DIR] [--level LEVEL]",
        description="Join the reports of a campaign's shards (each a `conformance fuzz --shard I/N` "
                    "--report folder) into one: failures deduplicated by requirement and root cause, their "
                    "case files, the exchanges added up, and whether the shards' seeds were disjoint.")
    p.add_argument("folders", nargs="+", metavar="DIR", help="a shard's report folder (fuzz.json, cases/)")
    p.add_argument("--report", default=None, metavar="DIR",
                   help="where the merged fuzz.json, report.md and cases/ go (default "
                        "reports/<profile>-fuzz-merged-<timestamp>)")
    p.add_argument("--level", default="must", choices=["must", "should", "may"],
                   help="lowest level whose failure makes the exit code 1 (default must)")
    return p


def cmd_fuzz_merge(args: argparse.Namespace) -> int:
    from conformance.report.shards import merge, read_shard
    from conformance.report.summary import gates
    from conformance.run.config import writable_dir

    folders = [Path(f) for f in args.folders]
    profile = read_shard(folders[0])["profile"]
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = writable_dir(Path(args.report or f"reports/{profile}-fuzz-merged-{stamp}"), "--report")
    merged = merge(folders, out)
    print(f"conformance fuzz merge: {len(merged.shards)} shard(s) of {merged.profile}, {merged.exchanges} "
          f"exchanges, {len(merged.failures)} distinct failure(s); {out / 'fuzz.json'}, {out / 'report.md'}")
    if merged.overlapping_seeds:
        print(f"warning: the shards drew {len(set(merged.overlapping_seeds))} seed(s) twice (give every "
              "shard the same --seed and --workers and its own --shard I/N)", file=sys.stderr)
    if merged.kit_errors:
        return EXIT_INTERNAL
    failed = any(gates(str(f.get("level")), args.level) for f in merged.new_failures)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    import asyncio

    import uvicorn
    import yaml

    from conformance.run.config import UsageFailure
    from conformance.run.launch import CONTROL_PREFIX, reference_app
    from conformance.run.profiles import load_profile

    prof = load_profile(args.profile)
    control = args.control or args.control_port is not None
    app = reference_app(prof, args.fault, shapes=args.shapes, control=control)
    base = f"http://{args.host}:{args.port}"
    ports = [args.port] if args.control_port is None else [args.port, args.control_port]
    if len(set(ports)) < len(ports):
        raise UsageFailure("--control-port must differ from --port")
    for port in ports:
        try:  # one line now rather than uvicorn's log later
            with socket.create_server((args.host, port)):
                pass
        except OSError as exc:
            raise UsageFailure(f"cannot listen on {args.host}:{port}: {exc.strerror or exc}") from None
    control_at = (f"http://{args.host}:{args.control_port}{CONTROL_PREFIX}" if args.control_port is not None
                  else base + CONTROL_PREFIX)
    if args.write_config:
        config: dict[str, Any] = {"target": base, "credentials": prof.reference_credentials}
        if control:
            config["control"] = control_at
        elif prof.reference_world:  # what an operator names without control: the seeded world
            config["world"] = prof.reference_world
        try:
            Path(args.write_config).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        except OSError as exc:
            raise UsageFailure(
                f"--write-config {args.write_config} cannot be written: {exc.strerror or exc}") from None
    faults = f", faults: {', '.join(args.fault)}" if args.fault else ""
    faults += f", shape variant {args.shapes}" if args.shapes is not None else ""
    print(f"serving the {prof.name} reference on {base} "
          f"(control: {control_at if control else 'off'}{faults})", flush=True)
    if args.control_port is None:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        return EXIT_OK
    from conformance.kit.reference import split_control

    served, admin = split_control(app, CONTROL_PREFIX)
    servers = [uvicorn.Server(uvicorn.Config(one, host=args.host, port=port, log_level="warning"))
               for one, port in ((served, args.port), (admin, args.control_port))]

    async def both() -> None:
        tasks = [asyncio.ensure_future(server.serve()) for server in servers]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for server in servers:  # a signal reaches the one whose handler came last: stop the other too
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(both())
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from conformance.drivers.replay import pytest_reproducer, replay

    if args.pytest:
        print(pytest_reproducer(Path(args.case)), end="")
        return EXIT_OK
    status, message = replay(Path(args.case), target=args.target, config_path=args.config, token=args.token,
                             binding=args.binding, show=None if args.quiet else print)
    print(message)
    return {"failed": EXIT_FAILED, "passed": EXIT_OK}.get(status, EXIT_UNREACHABLE)


def cmd_selftest(args: argparse.Namespace) -> int:
    from conformance.proofs.selftest import selftest
    from conformance.run.profiles import load_profile

    names = [args.profile] if args.profile else available()
    ok = True
    for name in names:
        ok &= selftest(load_profile(name), budget=args.budget, seed=args.seed, out=print,
                       workers=workers(args.workers),
                       shape_seeds=shape_seeds(args.shape_seeds)).ok
    return EXIT_OK if ok else EXIT_FAILED


def cmd_baseline(args: argparse.Namespace) -> int:
    from conformance.report.baseline import baseline_from_summary
    from conformance.report.diff import read_summary
    from conformance.run.config import UsageFailure

    text = baseline_from_summary(read_summary(Path(args.summary)))
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageFailure(f"--output {args.output} cannot be written: {exc.strerror or exc}") from None
    else:
        print(text, end="")
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    import json

    from conformance.report.diff import comparable, diff_summaries, read_summary, render

    old, new = read_summary(Path(args.old)), read_summary(Path(args.new))
    warning = comparable(old, new, args.old, args.new, args.binding)  # ValueError (exit 2): two profiles
    if warning:
        print(warning, file=sys.stderr)
    changes = diff_summaries(old, new, args.binding)
    print(json.dumps(changes, indent=2) if args.json else render(changes, old, new))
    return EXIT_FAILED if changes["regressions"] else EXIT_OK


COMMANDS = {"list": cmd_list, "run": cmd_run, "fuzz": cmd_fuzz, "serve": cmd_serve, "replay": cmd_replay,
            "selftest": cmd_selftest,
            "baseline": cmd_baseline, "diff": cmd_diff, "fuzz merge": cmd_fuzz_merge}


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C, wherever a command is when it comes (a run installs its own
    handlers once it has started; this covers start-up)."""
    raise KeyboardInterrupt


def usage_errors() -> tuple[type[Exception], ...]:
    """The errors that are the user's (one line, exit 2). Imported when an exception is told
    apart, not at start-up: a command that raised one has loaded its module already."""
    from conformance.catalog import ProfileError
    from conformance.documents.schemas import SpecError
    from conformance.documents.statements import StatementMapError
    from conformance.run.config import ConfigError  # UsageFailure too

    return ProfileError, SpecError, ConfigError, StatementMapError, ValueError


def main(argv: list[str] | None = None) -> int:
    import signal

    try:
        signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (called from a test, say)
        pass
    given = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(next((word for word in given if not word.startswith("-")), ""))
    if given[:2] == ["fuzz", "merge"]:  # a verb of fuzz, not a profile named merge
        args = merge_parser().parse_args(given[2:])
        args.command = "fuzz merge"
    else:
        args = parser.parse_args(given)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`conformance list bindu | head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        if isinstance(exc, usage_errors()):
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        # a bug of the tool: one line, the traceback only on request
        if os.environ.get("CONFORMANCE_DEBUG"):
            raise
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno}); "
              "this is a bug of conformance: set CONFORMANCE_DEBUG=1 for the traceback and please report it",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
