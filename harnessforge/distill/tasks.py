"""Task cards: each valid milestone with a passing run the Reviewer accepted, as a self-contained task.

A milestone gets a card only when one of its passing runs may be a reference by the rules'
`distill.gates` (`tasks`: no discard reason, or only reasons that allow it). `verify-tasks` then keeps
the cards that rebuild and reproduce from the card alone (`verified_tasks`), and only those become
Harbor tasks and SWE-bench instances. A card holds the environment (image tag and a Dockerfile
that rebuilds it: the base image, the recipe's install steps, the repository from a bundle of its
history up to the base commit), the statement, FAIL_TO_PASS / PASS_TO_PASS and a command that runs
them, the easiest accepted passing run as reference, the hint ladder with how many accepted passing
runs needed each level, and the Reviewer's grade of the reference run.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable

from .. import __version__
from ..envs.images import OFFLINE_VARS
from ..envs.recipes import DEPS_DIR, dependency_files
from ..envs.workspace import SANDBOX_UID, SANDBOX_USER
from ..errors import ArtifactError
from ..gitio import GitRepo
from ..models.common import utcnow
from ..models.distill import CardHint, CardSolution, CardVerification, Review, TaskCard
from ..models.env import ImageRecord, Recipe, Validation
from ..models.plan import Milestone, MilestonePlan
from ..models.trajectory import VerifierReport
from ..rules import DistillRules
from ..store import Store
from .moments import hint_log, key_moments
from .runs import RunView

WORKDIR = "/workspace"


def dockerfile(recipe: Recipe, base_commit: str) -> str:
    """The environment as a Dockerfile; beside it `deps/` (the dependency manifests the install steps
    read) and `repo.bundle` (the history up to the base commit). Install runs without the offline
    switches the tests run with, as in `envs.images`."""
    install_env = {name: value for name, value in sorted(recipe.env.items()) if name not in OFFLINE_VARS}
    lines = [f"FROM {recipe.base_image}", "USER root"]
    lines += [f"RUN id -u {SANDBOX_USER} >/dev/null 2>&1 || useradd -u {SANDBOX_UID} -m {SANDBOX_USER}"]
    lines += [f"COPY deps/ {DEPS_DIR}/", f"RUN chmod -R a+rX {DEPS_DIR}"]
    lines += [f"ENV {name}={shlex.quote(value)}" for name, value in install_env.items()]
    lines += [f"RUN {step}" for step in recipe.install]
    lines += [
        f"ENV {name}={shlex.quote(value)}" for name, value in sorted(recipe.env.items()) if name not in install_env
    ]
    lines += [
        "COPY repo.bundle /tmp/repo.bundle",
        f"RUN git clone -q /tmp/repo.bundle {WORKDIR} && git -c safe.directory='*' -C {WORKDIR} checkout -q "
        f"{base_commit} && git -c safe.directory='*' -C {WORKDIR} remote remove origin && rm /tmp/repo.bundle "
        f"&& chown -R {SANDBOX_UID}:{SANDBOX_UID} {WORKDIR}",
        f"WORKDIR {WORKDIR}",
        f"USER {SANDBOX_UID}",
    ]
    lines += [f"RUN {step}" for step in recipe.prepare]
    return "\n".join(lines) + "\n"


def test_command(recipe: Recipe, tests: list[str]) -> str:
    """Run the given tests; exit 0 only when all pass (the reward)."""
    ids = " ".join(shlex.quote(test) for test in tests)
    by_runner = {
        "pytest": f"python -m pytest -p no:cacheprovider -q {ids}",
        "go": f"go test ./... -run {shlex.quote('^(' + '|'.join(tests) + ')$')}",
        "cargo": "cargo test",
        "jest": f"npx jest {ids}",
        "vitest": f"npx vitest run {ids}",
    }
    return by_runner.get(recipe.runner, recipe.test_cmd.replace("{tests}", ids))


def task_cards(
    store: Store,
    reviews: list[Review],
    runs: list[RunView],
    rules_hash: str,
    gates: DistillRules,
    allow_synthetic: bool = True,
    only: tuple[str, str] | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> list[TaskCard]:
    """A card for every valid milestone with an accepted passing run, of every planned repo (or of
    milestone `only`: (repo, id)). Its hint statistics count the accepted passing runs only. A plan or
    images file that exists but cannot be read is said (`log`, naming it), never silently no cards."""
    cards = []
    views = {run.key: run for run in runs}
    for key in [only[0]] if only else store.repo_keys():
        if not (store.plan_file(key).exists() and store.images_file(key).exists()):
            continue  # not planned, or no environment built: no task to pose
        try:
            plan = store.load_plan(key)
            images = store.load_images(key)
        except ArtifactError as e:
            log(f"{e}; {key} gets no task cards until it is fixed (re-run `plan` or `env build`)")
            continue
        for milestone in plan.milestones:
            record = images.for_milestone(milestone.id)
            if not milestone.is_task or record is None or (only and milestone.id != only[1]):
                continue
            accepted = [
                review
                for review in reviews
                if (review.repo, review.milestone_id) == (key, milestone.id)
                and review.status == "PASS"
                and gates.allows(review.discard_reasons, "tasks")
                and (allow_synthetic or not review.synthetic)
            ]
            if accepted:
                card = _card(store, plan, milestone, record, accepted, views, rules_hash)
                card.difficulty_by_run = {
                    review.run_id: review.difficulty
                    for review in sorted(reviews, key=lambda review: review.run_id)
                    if (review.repo, review.milestone_id) == (key, milestone.id)
                }
                cards.append(card)
    return cards


def _card(
    store: Store,
    plan: MilestonePlan,
    milestone: Milestone,
    record: ImageRecord,
    runs: list[Review],
    views: dict[tuple[str, str, str], RunView],
    rules_hash: str,
) -> TaskCard:
    """One valid milestone's card, its reference the easiest of its accepted passing `runs`."""
    key = plan.repo.key
    validation = store.load_validation(key, milestone.id)
    repo, at = GitRepo(store.git_cache(key)), milestone.verify_commit
    deps = dependency_files(record.recipe, repo.files(at), lambda path: repo.show(at, path))
    ladder = store.load_hints(key, milestone.id)
    solved = Counter(review.max_hint_level for review in runs)
    best = min(runs, key=lambda review: (review.synthetic, review.difficulty, review.run_id))
    hints = [
        CardHint(level=hint.level, name=hint.name, content=hint.content, solved_runs=solved[hint.level])
        for hint in ladder.levels
        if not hint.empty
    ]
    provenance = {
        "repo": key,
        "commits": milestone.commits,
        "harness_version": __version__,
        "rules_hash": rules_hash,
        "plan_id": plan.plan_id,
        "created_at": utcnow().isoformat(),
        "release": milestone.release,
    }
    return TaskCard(
        task_id=f"{key}-{milestone.id}",
        repo=key,
        milestone_id=milestone.id,
        title=milestone.title,
        statement=milestone.brief,
        base_commit=milestone.base_commit,
        dockerfile=dockerfile(record.recipe, milestone.base_commit),
        verify_commit=milestone.verify_commit,
        image=record.tag,
        dependency_files={path: data.decode(errors="replace") for path, data in deps.items()},
        test_cmd=test_command(record.recipe, validation.fail_to_pass + validation.pass_to_pass),
        fail_to_pass=validation.fail_to_pass,
        pass_to_pass=validation.pass_to_pass,
        reference_run=best.run_id,
        hint_ladder=hints,
        difficulty=best.difficulty,
        rl_value=best.rl_value,
        tags=[record.recipe.language, record.recipe.runner, *([milestone.release] if milestone.release else [])],
        provenance=provenance,
        synthetic_reference=best.synthetic,
        solution=_solution(store, views.get((key, best.run_id, milestone.id))),
        verification=_verification(store, key, best.run_id, milestone.id, validation),
    )


def _solution(store: Store, run: RunView | None) -> CardSolution | None:
    """How the reference run went: its numbers, key moments, hint log and its own final diff."""
    if run is None:
        return None
    summary, diff = run.summary, store.milestone_run(*run.key).final_diff
    return CardSolution(
        run_id=summary.run_id,
        model=summary.model,
        turns=summary.turns or 0,
        edit_attempts=summary.edits,
        test_runs=summary.test_runs,
        hints_received=[hint.level for hint in run.hints if hint.level is not None],
        key_moments=key_moments(run),
        hint_log=hint_log(run),
        diff=diff.read_text(errors="replace") if diff.exists() else "",
    )


def _verification(
    store: Store, key: str, run_id: str, milestone_id: str, validation: Validation
) -> CardVerification | None:
    """The reference run's verification report, in the card's terms."""
    path = store.milestone_run(key, run_id, milestone_id).test_results
    if not path.exists():
        return None
    report = VerifierReport.model_validate_json(path.read_bytes())
    return CardVerification(
        acceptance_passed=report.acceptance.passed,
        acceptance_failed=report.acceptance.failed,
        fail_to_pass=len(validation.fail_to_pass),
        pass_to_pass=len(validation.pass_to_pass),
        regressions=len(report.regressions),
        regression_tests=report.regressions,
        suite_checked=report.suite_checked,
        suite_tests=len(validation.suite_pass_to_pass),
        same_core_files=not report.missing_core_files,
        missing_core_files=report.missing_core_files,
        additional_files=report.extra_files,
    )
