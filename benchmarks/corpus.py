"""The real-repository corpus: each release range screened, planned, built and validated; a yield table.

    .venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\
        --store /tmp/corpus-store --out docs/corpus.md [--json FILE] [--only flask,mux] \\
        [--baseline pluggy,httprouter] [--baseline-milestones N] [--repeats 3] [--fresh] [--no-docker]

Per entry, every stage is timed and a failing stage is recorded with its error while the run goes
on: clone (the store's copy of the local clone, else of `repo` on GitHub), screen (its verdict; a
failure does not stop the entry), plan, env build, validate (K = --repeats runs per side). The table
per range: milestones, type mix, feature-titled share, changelog entries covered, valid milestones,
FAIL_TO_PASS tests, every non-valid status and reason with counts, and wall seconds; then totals per
language and overall, judged against the targets of issue 16 (item 6).

`--baseline a,b` also measures those repositories the per-instance way (as the SWE-bench harness
does): per milestone one image from a Dockerfile that copies in a git bundle of the repository
(made on the host: no network clone), checks out the base commit and installs the requirements our
recipe installs plus the project itself, built with `docker build --network host`; then K runs of
the suite at base + test.patch and K at base + ground_truth.patch + test.patch, each in a fresh
`--network none` container, read with our runners' parsers so the verdicts compare with ours. Our
side of that comparison is built from scratch (a fresh image tag), and both are reported in wall
seconds per validated milestone. Images made under fresh tags are removed afterwards (--keep-images).

The modules: corpus_entries.py (the corpus file, the result rows, the options), corpus_baseline.py (the
per-instance baseline, the removal of fresh images), corpus_report.py (totals, targets, the Markdown and JSON);
this one measures each entry, runs the corpus and is the command line.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_baseline import baseline_entry, remove_fresh_images  # noqa: E402
from corpus_entries import (  # noqa: E402
    CorpusError,
    Entry,
    EntryResult,
    Log,
    MilestoneRow,
    Options,
    load_entries,
    one_line,
    select,
)
from corpus_report import document, keeping_reviews, markdown  # noqa: E402

from harnessforge.envs.environment import build as build_envs  # noqa: E402
from harnessforge.envs.environment import validate as validate_milestones  # noqa: E402
from harnessforge.gitio import resolve_repo  # noqa: E402
from harnessforge.mining.merging import merge_untested  # noqa: E402
from harnessforge.mining.planner import plan as plan_range  # noqa: E402
from harnessforge.mining.screening import screen  # noqa: E402
from harnessforge.models import RepoSpec  # noqa: E402
from harnessforge.models.env import Validation  # noqa: E402
from harnessforge.models.plan import text_measures  # noqa: E402
from harnessforge.repos import open_repo  # noqa: E402
from harnessforge.rules import Rules, load_rules  # noqa: E402
from harnessforge.store import Store  # noqa: E402


def _stage(result: EntryResult, stage: str, fn: Callable[[], object], log: Log):
    """Run one stage, timed; its error is recorded in one line and None returned (never raised)."""
    start = time.perf_counter()
    try:
        return fn()
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - one bad entry (or stage) must not stop the corpus
        result.errors[stage] = one_line(e)
        log(f"{result.name}: {stage} failed: {result.errors[stage]}")
        return None
    finally:
        result.seconds[stage] = round(time.perf_counter() - start, 2)


def source_of(entry: Entry, root: Path | None) -> str:
    """The local clone (an explicit path, else <root>/<name>), else owner/name on GitHub."""
    if entry.path:
        if not Path(entry.path).exists():
            raise FileNotFoundError(f"no local clone at {entry.path}")
        return entry.path
    if root is not None and (root / entry.name).exists():
        return str(root / entry.name)
    if entry.repo:
        return entry.repo
    raise FileNotFoundError(f"no local clone at {root / entry.name if root else entry.name} and no `repo` to clone")


def fresh_spec(spec: RepoSpec, stamp: str) -> RepoSpec:
    """The same repository under a key (and so an image tag) no earlier build used: built from scratch."""
    return spec.model_copy(update={"key": f"{spec.key}.fresh{stamp}"})


class _Clock:
    """Per-milestone validation seconds from validate's own log: with one worker, milestones are
    validated one after the other and each is logged when done (`m01: valid: ...`)."""

    def __init__(self, ids: list[str], log: Log, prefix: str):
        self.ids, self.log, self.prefix = set(ids), log, prefix
        self.last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def __call__(self, line: str) -> None:
        milestone_id = line.split(":", 1)[0]
        if milestone_id in self.ids and milestone_id not in self.seconds:
            now = time.perf_counter()
            self.seconds[milestone_id] = round(now - self.last, 2)
            self.last = now
        self.log(f"{self.prefix}{line}")


def measure_entry(
    entry: Entry, store: Store, rules: Rules, root: Path | None, options: Options, log: Log = print
) -> EntryResult:
    """Clone, screen, plan, build and validate one range; each stage's seconds and errors are recorded."""
    result = EntryResult(entry.name, entry.language, entry.group, requested=f"{entry.from_ref} → {entry.to_ref}")
    prefix = f"{entry.name}: "

    def sub(line: str) -> None:
        log(f"{prefix}  {line}")

    def clone():
        result.source = source_of(entry, root)
        spec = resolve_repo(result.source)
        if options.fresh or entry.name in options.baseline:
            spec = fresh_spec(spec, options.stamp)
        result.key = spec.key
        open_repo(store, spec)
        return spec

    spec = _stage(result, "clone", clone, log)
    if spec is None:
        return result
    log(f"{prefix}clone of {result.source} as {spec.key} ({result.seconds['clone']:.1f}s)")

    report = _stage(result, "screen", lambda: screen(store, spec, rules, collect=options.collect), log)
    if report is not None:
        result.screen_passed = report.passed
        result.screen_failed = [criterion.name for criterion in report.criteria if criterion.passed is False]
        result.primary_language = report.primary_language
        failed = ", ".join(result.screen_failed) or "none"
        log(
            f"{prefix}screen: {'passed' if report.passed else 'failed'} (failed: {failed}) "
            f"({result.seconds['screen']:.1f}s)"
        )

    start, end = (None if ref == "default" else ref for ref in (entry.from_ref, entry.to_ref))
    planned = _stage(result, "plan", lambda: plan_range(store, spec, rules, start, end), log)
    if planned is None:
        return result
    plan = planned.plan
    result.range = f"{plan.from_ref} → {plan.to_ref}"
    result.notes = list(plan.notes)
    result.milestones = len(plan.milestones)
    result.type_mix = dict(plan.report.type_mix)
    result.feature_titled = plan.report.feature_titled
    result.entries_citing, result.entries_covered = plan.report.entries_citing, plan.report.entries_covered
    result.text = task_text(plan)
    result.rows = [
        MilestoneRow(
            milestone.id,
            milestone.title,
            milestone.type,
            milestone.title_source,
            headlines=len(milestone.headlines),
            coherent="unrelated_parts" not in milestone.flags,
            expected_turns=milestone.expected_turns,
        )
        for milestone in plan.milestones
    ]
    covered = f"{result.entries_covered}/{result.entries_citing}"
    log(
        f"{prefix}plan {result.range}: {result.milestones} milestones, {result.feature_titled} feature-titled, "
        f"{covered} citing entries covered ({result.seconds['plan']:.1f}s)"
    )
    if not plan.milestones:
        return result

    if options.build:
        images = _stage(result, "env build", lambda: build_envs(store, spec.key, rules, log=sub), log)
        if images is None:
            return result
        result.images_built = sum(1 for image in images.images if image.build_seconds)
        result.images_cached = len(images.images) - result.images_built
        result.image_build_s = round(sum(image.build_seconds for image in images.images), 2)
        log(
            f"{prefix}env build: {result.images_built} image(s) built, {result.images_cached} cached, "
            f"{len(images.failures)} milestone(s) without one ({result.seconds['env build']:.1f}s)"
        )
    if options.backend is None:
        return result

    clock = _Clock([milestone.id for milestone in plan.milestones], log, prefix + "  ")
    backend = options.backend
    # The baseline compares seconds per milestone, which only one worker gives.
    workers = 1 if entry.name in options.baseline else options.workers

    def run():
        validations = validate_milestones(store, spec.key, rules, backend=backend, log=clock, workers=workers)

        def again(milestone_id: str) -> Validation:
            (validation,) = validate_milestones(
                store, spec.key, rules, milestone=milestone_id, backend=backend, log=clock
            )
            return validation

        return validations + merge_untested(store, spec.key, rules, again, log=clock)  # the later verdict wins

    started = datetime.now(timezone.utc).replace(microsecond=0)  # validated_at has whole seconds
    validations = _stage(result, "validate", run, log)
    if validations is None:  # it stopped midway: keep the verdicts it saved before
        if saved := saved_validations(store, spec.key, [milestone.id for milestone in plan.milestones], started):
            refresh_rows(result.rows, store.load_plan(spec.key), saved)
            record(result, saved, clock.seconds if workers == 1 else {})
            log(f"{prefix}validate: kept the {len(saved)} verdict(s) saved before it stopped")
        return result
    validated_plan = store.load_plan(spec.key)
    merged_into = {
        milestone.id: milestone.merged_into for milestone in validated_plan.milestones if milestone.merged_into
    }
    refresh_rows(result.rows, validated_plan, validations)
    record(result, validations, clock.seconds if workers == 1 else {}, merged_into)
    result.text = task_text(validated_plan)  # validation read the interface of FAIL_TO_PASS again
    log(
        f"{prefix}validate: {result.valid}/{result.milestones} valid, {result.fail_to_pass} FAIL_TO_PASS "
        f"({result.seconds['validate']:.1f}s)"
    )
    return result


def refresh_rows(rows: list[MilestoneRow], validated_plan, validations: list[Validation]) -> None:
    """The rows as validation left the milestones: a carrier of merged work is a new task, and validation keeps
    in a title only the headlines a graded test covers when one is."""
    untested = {validation.milestone_id: set(validation.untested_headlines) for validation in validations}
    for row, milestone in zip(rows, validated_plan.milestones):
        row.coherent, row.expected_turns = "unrelated_parts" not in milestone.flags, milestone.expected_turns
        row.headlines = len(milestone.headlines)
        row.headlines_untested = sum(headline.text in untested.get(row.id, ()) for headline in milestone.headlines)


def task_text(plan) -> dict[str, int]:
    """Issue 30's measures of a plan's task texts: entries placed and carried, broken texts, housekeeping in
    text, words lost, interface named (from the milestones as they are now: validated ones name FAIL_TO_PASS's)."""
    report = plan.report
    return {
        "entries_in_range": report.entries_in_range,
        "entries_placed": report.entries_placed,
        "work_entries": report.work_entries,
        "work_entries_carried": report.work_entries_carried,
        **text_measures(plan.milestones),
    }


def saved_validations(store: Store, key: str, ids: list[str], since: datetime) -> list[Validation]:
    """The verdicts validate wrote since `since` (older ones in the store belong to an earlier run)."""
    out = []
    for milestone_id in ids:
        try:
            validation = store.load_validation(key, milestone_id)
        except Exception:  # noqa: BLE001 - none written (or unreadable): that milestone stays unvalidated
            continue
        if validation.validated_at >= since:
            out.append(validation)
    return out


def acceptance_measures(rows: list[MilestoneRow], by_id: dict[str, Validation]) -> dict[str, int]:
    """Issue 31's measures over the valid milestones: collateral tests set aside and still graded (when they
    were all a milestone had), the title's features a graded test covers, and the milestones flagged weak."""
    valid = [(row, by_id[row.id]) for row in rows if row.id in by_id and by_id[row.id].status == "valid"]
    untested = [row for row in rows if row.status not in ("valid", "merged", "not validated")]
    return {
        "merged": sum(1 for row in rows if row.status == "merged"),
        "untested_in_chain": sum(1 for row in untested if row is not rows[-1]),
        "untested_tail": sum(1 for row in untested if row is rows[-1]),
        "fail_to_pass": sum(len(validation.fail_to_pass) for _, validation in valid),
        "collateral_set_aside": sum(len(set(v.collateral) - set(v.fail_to_pass)) for _, v in valid),
        "collateral_graded": sum(len(set(v.collateral) & set(v.fail_to_pass)) for _, v in valid),
        "headlines": sum(row.headlines for row, _ in valid),
        "headlines_covered": sum(row.headlines - row.headlines_untested for row, _ in valid),
        "weak": sum(1 for row, _ in valid if row.headlines_untested),
    }


def record(
    result: EntryResult,
    validations: list[Validation],
    seconds: dict[str, float],
    merged_into: dict[str, str] | None = None,
) -> None:
    """Fill the yield columns from validate's verdicts (a milestone it did not return stays 'not validated');
    `merged_into`: untested milestones merged into a later one (status `merged`, its verdict as the reason)."""
    by_id = {validation.milestone_id: validation for validation in validations}
    merged_into = merged_into or {}
    result.validated = True
    for row in result.rows:
        validation = by_id.get(row.id)
        if validation is None:
            continue
        row.status, row.reason = validation.status, validation.reason
        if row.id in merged_into:
            row.status, row.reason = "merged", f"{validation.status}, into {merged_into[row.id]}"
        row.fail_to_pass, row.candidates = len(validation.fail_to_pass), len(validation.candidates)
        row.validation_s = seconds.get(row.id)
        shows_detail = validation.detail and validation.status != "valid"
        row.detail = validation.detail.splitlines()[0][:300] if shows_detail else ""
    result.valid = sum(1 for row in result.rows if row.status == "valid")
    result.fail_to_pass = sum(row.fail_to_pass for row in result.rows)
    result.acceptance = acceptance_measures(result.rows, by_id)
    not_valid = [row for row in result.rows if row.status != "valid"]
    result.not_valid = dict(Counter(f"{row.status}: {row.reason}" if row.reason else row.status for row in not_valid))


# ---- the corpus -----------------------------------------------------------------------------------------------------
def run_corpus(
    entries: list[Entry], store: Store, rules: Rules, root: Path | None, options: Options, log: Log = print
) -> list[EntryResult]:
    """Every entry in turn; a failing entry is recorded and the next one runs."""
    rules.environments.repeats = options.repeats
    results: list[EntryResult] = []
    try:
        for i, entry in enumerate(entries, start=1):
            log(f"[{i}/{len(entries)}] {entry.name} ({entry.language}, {entry.from_ref} → {entry.to_ref})")
            results.append(_one_entry(entry, store, rules, root, options, log))
    except KeyboardInterrupt:  # what was measured so far is still written
        log(f"interrupted: the {len(results)} entries measured before are reported")
    return results


def _one_entry(entry: Entry, store: Store, rules: Rules, root: Path | None, options: Options, log: Log) -> EntryResult:
    try:
        result = measure_entry(entry, store, rules, root, options, log)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - a bug outside the stages still loses one entry only
        result = EntryResult(entry.name, entry.language, entry.group, errors={"entry": one_line(e)})
        log(f"{entry.name}: failed: {result.errors['entry']}")
    if entry.name in options.baseline and result.key and result.validated and options.build:
        result.baseline = _stage(
            result, "baseline", partial(baseline_entry, store, result.key, rules, result, options, log), log
        )
    elif entry.name in options.baseline:
        result.errors.setdefault("baseline", "not run: the entry was not built and validated in Docker")
    if result.key and (options.fresh or entry.name in options.baseline) and not options.keep_images:
        removed = remove_fresh_images(result.key)
        log(f"{entry.name}: removed {removed} image(s) built under the fresh tag")
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", required=True, type=Path, help="the corpus file (benchmarks/corpus.yaml)")
    parser.add_argument("--root", type=Path, help="where local clones are: <root>/<name>")
    parser.add_argument("--store", required=True, type=Path, help="the store to plan and build in (a scratch one)")
    parser.add_argument("--out", required=True, type=Path, help="the Markdown table (docs/corpus.md)")
    parser.add_argument("--json", type=Path, help="the same results as JSON")
    parser.add_argument("--only", default="", help="comma-separated entry names")
    parser.add_argument("--baseline", default="", help="comma-separated entry names measured the per-instance way too")
    parser.add_argument("--baseline-milestones", type=int, help="the baseline on the first N milestones with an image")
    parser.add_argument("--repeats", type=int, default=3, help="K: validation runs per side (default 3)")
    parser.add_argument("--workers", type=int, default=1, help="validate's workers (1 gives per-milestone seconds)")
    parser.add_argument("--fresh", action="store_true", help="build every entry under a fresh image tag (from scratch)")
    parser.add_argument("--keep-images", action="store_true", help="keep the images made under fresh tags")
    parser.add_argument("--no-docker", action="store_true", help="no env build; validation only with --backend local")
    parser.add_argument("--backend", choices=("docker", "local", "none"), help="validation backend (default docker)")
    parser.add_argument("--no-collect", action="store_true", help="screening counts tests statically")
    parser.add_argument("--rules", type=Path, help="a rules file over the defaults")
    parser.add_argument("--note", default="", help="a line shown at the top of the Markdown (e.g. 'Smoke run')")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.repeats < 1:
            raise CorpusError("--repeats must be at least 1")
        if args.baseline_milestones is not None and args.baseline_milestones < 1:
            raise CorpusError("--baseline-milestones must be at least 1")
        backend = args.backend or ("none" if args.no_docker else "docker")
        if args.no_docker and backend == "docker":
            raise CorpusError("--no-docker with --backend docker: choose one")
        if args.root is not None and not args.root.is_dir():
            raise CorpusError(f"--root {args.root}: not a directory")
        only = [name for name in args.only.split(",") if name]
        baseline = [name for name in args.baseline.split(",") if name]
        if baseline and (args.no_docker or backend != "docker"):
            raise CorpusError("--baseline needs Docker (env build and validation in Docker)")
        entries = select(load_entries(args.repos), only, baseline)
        rules = load_rules(args.rules)
    except Exception as e:  # noqa: BLE001 - bad options or files: one line, nothing runs
        print(f"error: {e if isinstance(e, CorpusError) else one_line(e)}", file=sys.stderr)
        return 2
    options = Options(
        build=not args.no_docker,
        backend=None if backend == "none" else backend,
        repeats=args.repeats,
        workers=args.workers,
        collect=not args.no_collect,
        fresh=args.fresh,
        keep_images=args.keep_images,
        baseline=tuple(baseline),
        baseline_milestones=args.baseline_milestones,
    )
    store = Store(args.store)
    start = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)

    results = run_corpus(entries, store, rules, args.root, options, log)
    words = [".venv/bin/python", "benchmarks/corpus.py", *(argv or sys.argv[1:])]
    command = " ".join(shlex.quote(word) for word in words)
    doc = document(results, options, command, time.perf_counter() - start, args.note)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(keeping_reviews(markdown(doc), args.out.read_text() if args.out.exists() else ""))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    overall = doc["totals"]["all"]
    wrote = f"{args.out}" + (f" and {args.json}" if args.json else "")
    log(
        f"{overall['ranges']} ranges, {overall['milestones']} milestones, {overall['valid']} valid, "
        f"{overall['fail_to_pass']} FAIL_TO_PASS; "
        f"{sum(1 for result in results if result.errors)} with errors; wrote {wrote}"
    )
    for target in doc["targets"]:
        met = "-" if target["met"] is None else "met" if target["met"] else "NOT met"
        log(f"target {target['target']}: {target['measured']} -> {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
