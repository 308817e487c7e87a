"""The environments stage over the store: `env build`, `validate` and grading for one repo.

`Environment` knows, for each milestone, its recipe, its image and how to open a sandbox at a
commit — in Docker when an engine answers, else locally with the host's toolchain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import get_args

from ..errors import ConfigError, EnvError
from ..files import FileClassifier
from ..models import Criterion, Milestone, RepoSpec
from ..models.env import EnvErrorReason, Grade, Recipe, RepoImages, Validation
from ..repos import open_repo, spec_for
from ..rules import Rules
from ..store import Store
from . import engine
from .backends import Backend
from .candidate_grading import grade_candidate
from .classification import regraded, title_without_untested
from .images import build_env_image, ensure_base
from .local_sandbox import LocalSandbox
from .milestone_interface import refresh_interface, source_files
from .private_tests import private_reader
from .recipes import dependency_files, recipe_at
from .sandbox import Limits, Mount, Sandbox, SandboxSpec
from .test_checks import base_failures
from .validation import validate_milestone

# The local backend runs the host's own interpreter; these make the checkout importable.
LOCAL_ENV = {"python": {"PYTHONPATH": "{workspace}:{workspace}/src", "PYTHONHASHSEED": "0"}}


def build(store: Store, arg: str, rules: Rules, milestone: str | None = None, log=print) -> RepoImages:
    """Build (or find) the image of every dependency epoch the repo's milestones need."""
    spec = spec_for(store, arg)
    repo = open_repo(store, spec)
    plan = store.load_plan(spec.key)
    client = engine.connect(timeout=rules.environments.build_timeout_s)  # commits of big layers take minutes
    env = rules.environments
    if milestone and all(planned.id != milestone for planned in plan.milestones):
        raise EnvError(f"{spec.key} has no milestone {milestone!r}")
    images = RepoImages(repo_key=spec.key)
    if milestone and store.has_images(spec.key):
        # One milestone rebuilt: the others keep the images they have.
        images = store.load_images(spec.key)
        images.milestone_images.pop(milestone, None)
        images.failures.pop(milestone, None)
    by_hash: dict = {image.env_hash: image for image in images.images}
    failed: dict[str, EnvError] = {}  # recipe json (or base image) -> its error, so one epoch fails once
    seen: set[str] = set()  # recipes whose skipped lines were already reported
    for planned in plan.milestones:
        if milestone and planned.id != milestone:
            continue
        try:
            try:
                recipe = recipe_at(repo, planned.verify_commit, spec.key, env, base_commit=planned.base_commit)
            except ConfigError as e:  # e.g. an invalid pyproject.toml at this commit: this milestone only
                raise EnvError(f"no recipe at {planned.verify_commit[:10]}: {e}", "install_failed") from None
            key = recipe.model_dump_json()
            if key not in seen and recipe.skipped_requirements:
                skipped = len(recipe.skipped_requirements)
                log(f"{planned.id}: skipped {skipped} requirement line(s) that cannot be installed:")
                for line in recipe.skipped_requirements:
                    log(f"  {line}")
            seen.add(key)
            for cached in (key, f"base:{recipe.base_image}"):
                if cached in failed:
                    raise failed[cached]
            try:
                ensure_base(client, recipe, env, log=log)
            except EnvError as e:
                failed[f"base:{recipe.base_image}"] = e
                raise
            files = repo.files(planned.verify_commit)
            deps = dependency_files(recipe, files, lambda path, commit=planned.verify_commit: repo.show(commit, path))
            try:
                record = build_env_image(client, store, spec.key, recipe, planned.verify_commit, deps, env, log=log)
            except EnvError as e:
                failed[key] = e
                raise
        except EnvError as e:
            images.failures[planned.id] = f"{e.reason}: {e}"
            log(f"{planned.id}: {e.reason}: {str(e).splitlines()[0]}")
            continue
        if record.env_hash not in by_hash:
            by_hash[record.env_hash] = record
            log(f"{record.tag}: {'built in %.1fs' % record.build_seconds if record.build_seconds else 'cached'}")
        images.milestone_images[planned.id] = record.env_hash
    used = set(images.milestone_images.values())
    images.images = [record for image_hash, record in by_hash.items() if image_hash in used]
    store.save_images(images)
    _record_screening(store, spec.key, images)
    return images


def environment_criterion(images: RepoImages) -> Criterion:
    """The screening report's "environment builds" criterion, decided by the last `env build`."""
    built = bool(images.images) and not images.failures
    reason = (
        "every milestone has an image"
        if built
        else "; ".join(f"{milestone_id}: {failure}" for milestone_id, failure in images.failures.items())
    )
    return Criterion(
        name="environment_builds",
        measured=f"{len(images.milestone_images)} built, {len(images.failures)} failed",
        threshold="the repo image builds and tests run",
        passed=built,
        reason=reason.splitlines()[0][:300] if reason else "no milestone to build",
        method="harnessforge env build",
    )


def _record_screening(store: Store, key: str, images: RepoImages) -> None:
    """Fill the screening report's "environment builds" criterion, when the repo was screened."""
    if not (store.repo_dir(key) / "screening.json").exists():
        return
    report = store.load_screening(key)
    new = environment_criterion(images)
    report.criteria = [new if criterion.name == "environment_builds" else criterion for criterion in report.criteria]
    store.save_screening(report)


class Environment:
    """Sandboxes for one repo's milestones."""

    def __init__(self, store: Store, repo: RepoSpec | str, rules: Rules, backend: Backend = "auto"):
        spec = spec_for(store, repo)
        key = spec.key
        self.store, self.key, self.rules = store, key, rules
        self.added_from = spec.url if spec.kind in ("worktree", "bare") else None  # a local repository's path
        self.repo = open_repo(store, spec)
        self.limits = Limits.from_rules(rules.environments)
        has_images = store.has_images(key)
        if backend == "auto":
            backend = "docker" if has_images and engine.available() else "local"
        self.backend = backend
        self.images = store.load_images(key) if backend == "docker" else None
        self.client = engine.connect() if backend == "docker" else None

    def recipe(self, milestone: Milestone) -> Recipe:
        if self.images is not None:
            record = self.images.for_milestone(milestone.id)
            if record is None:
                why = self.images.failures.get(milestone.id, "no image built for it")
                reason = why.split(":", 1)[0]  # failures are stored as "reason: message"
                reason = reason if reason in get_args(EnvErrorReason) else "install_failed"
                raise EnvError(f"{self.key} {milestone.id}: {why} (run `harnessforge env build`)", reason)
            return record.recipe
        return recipe_at(
            self.repo, milestone.verify_commit, self.key, self.rules.environments, base_commit=milestone.base_commit
        )

    def refresh_images(self, milestones: Sequence[Milestone]) -> list[str]:
        """Build again the image of each milestone whose recipe today differs from its image's (its base moved in a
        merge: what the image holds for the base, go.mod's modules or the npm packages only the base requires, is
        another base's); the ids rebuilt. Not thread-safe (it reads the repository): call it before the workers."""
        rebuilt = []
        for milestone in milestones if self.images is not None else []:
            record = self.images.for_milestone(milestone.id)
            try:
                current = recipe_at(
                    self.repo,
                    milestone.verify_commit,
                    self.key,
                    self.rules.environments,
                    base_commit=milestone.base_commit,
                )
            except (ConfigError, EnvError):
                continue  # no recipe today: the built image is all there is
            if record is not None and record.recipe != current:
                self.images = build(self.store, self.key, self.rules, milestone.id, log=lambda line: None)
                rebuilt.append(milestone.id)
        return rebuilt

    def opener(
        self, milestone: Milestone, labels: dict[str, str] | None = None, mounts: Sequence[Mount] = ()
    ) -> Callable[[str], Sandbox]:
        """commit -> a started sandbox for milestone `m` (every call gives a fresh one); `mounts`: what a
        scaffold that runs inside it brings."""
        recipe = self.recipe(milestone)
        labels = {"harnessforge.repo": self.key, "harnessforge.milestone": milestone.id, **(labels or {})}
        if self.backend == "docker":
            from .docker_sandbox import DockerSandbox

            image = self.images.for_milestone(milestone.id).tag
            spec = self._spec(recipe, recipe.env, labels, mounts)
            return lambda commit: DockerSandbox(replace(spec, commit=commit), image, self.client)
        if mounts:
            raise EnvError(
                f"the {self.backend} sandbox cannot hold a scaffold that runs inside it; use --sandbox docker"
            )
        spec = self._spec(recipe, LOCAL_ENV.get(recipe.language, {}), labels, mounts)
        return lambda commit: LocalSandbox(replace(spec, commit=commit))

    def _spec(
        self, recipe: Recipe, env: dict[str, str], labels: dict[str, str], mounts: Sequence[Mount]
    ) -> SandboxSpec:
        timeout = self.rules.environments.test_case_timeout_s
        return SandboxSpec(
            self.repo.path,
            "",
            env={**env, **({"HF_TEST_TIMEOUT": str(timeout)} if timeout else {})},
            prepare=recipe.prepare,
            limits=self.limits,
            labels=labels,
            mounts=list(mounts),
            hidden=self.hidden_paths(),
        )

    def hidden_paths(self) -> list[str]:
        """What no sandbox may show: the store, this repository's clone, and the local repository it was added
        from (its history holds every future commit)."""
        added = [self.added_from] if self.added_from else []
        return [str(Path(path).resolve()) for path in (self.store.root, self.repo.path, *added)]

    def image_of(self, milestone: Milestone) -> str:
        record = self.images.for_milestone(milestone.id) if self.images else None
        return record.tag if record else f"local:{self.backend}"

    def recover(self, labels: dict[str, str], timeout_s: float) -> bool:
        """After a lost sandbox: wait for the engine, remove the lost containers (`labels`); False if it stays away."""
        return self.client is None or engine.recover(self.client, labels, timeout_s)


def validate(
    store: Store,
    arg: str,
    rules: Rules,
    milestone: str | None = None,
    backend: Backend = "auto",
    log=print,
    workers: int = 1,
    force: bool = False,
) -> list[Validation]:
    """Validate each milestone (or one), write validation.json and record the verdict in the plan. A valid
    verdict of the other sandbox kind (Docker, local) is kept unless `force`: a local sandbox lacking what the
    image has must not turn a good verdict into an env_error.

    With `workers` > 1 milestones are validated concurrently, each in its own sandboxes (the test
    runs wait on containers and processes, so they overlap). Verdicts are still saved, recorded and
    logged in plan order by this thread: the plan file keeps one writer.
    """
    if workers < 1:
        raise EnvError(f"workers must be at least 1, got {workers}")
    spec = spec_for(store, arg)
    key = spec.key
    plan = store.load_plan(key)  # before anything else: no plan, nothing to validate
    env = Environment(store, spec, rules, backend)
    classify = FileClassifier(rules.planning)
    todo = [planned for planned in plan.milestones if not milestone or planned.id == milestone]
    if milestone and not todo:
        raise EnvError(f"{key} has no milestone {milestone!r}")
    if milestone and todo[0].status == "merged":
        raise EnvError(f"{key} {milestone} is merged into {todo[0].merged_into} (it had no test): validate that one")
    todo = [planned for planned in todo if planned.status != "merged"]  # their work is the next one's task
    if not force:
        kept = [planned for planned in todo if _other_kinds_verdict(store, key, planned, env)]
        for planned in kept:
            log(f"{planned.id}: kept its valid verdict from the other sandbox kind; --force replaces it")
        todo = [planned for planned in todo if planned not in kept]

    for rebuilt in env.refresh_images(todo):
        log(f"{rebuilt}: its image was built for another base (a merge moved it): built again")

    def one(planned: Milestone) -> Validation:
        _, test_patch = store.read_patches(key, planned.id)
        try:
            opener = env.opener(planned, {"harnessforge.stage": "validate"})
        except EnvError as e:
            return Validation(milestone_id=planned.id, status="env_error", reason=e.reason, detail=str(e), repeats=0)
        recipe = env.recipe(planned)
        return validate_milestone(
            opener, planned, test_patch, recipe, rules, env.image_of(planned), private[planned.id]
        )

    # read here, not in the pool's threads: one git process serves the repository
    private = {
        planned.id: private_reader(
            env.repo, planned.base_commit, planned.verify_commit, planned.test_files, source_files(planned, classify)
        )
        for planned in todo
    }

    validations = []
    pool = ThreadPoolExecutor(workers, thread_name_prefix="hf-validate") if workers > 1 else None
    try:
        for planned, validation in zip(todo, pool.map(one, todo) if pool else map(one, todo)):
            store.save_validation(key, validation)
            verdict = _acceptance(planned, validation) | {
                "status": validation.status,
                "fail_to_pass": validation.fail_to_pass,
                "pass_to_pass": validation.pass_to_pass,
                "ungraded": sorted(
                    test
                    for test, why in validation.rejected.items()
                    if why.startswith(("not_passing_at_verify", "flaky"))
                ),
                "base_failures": base_failures(
                    validation.fail_to_pass,
                    validation.base_runs[0].messages if validation.base_runs else {},
                    rules.planning.base_failures,
                ),
            }
            validated = planned.model_copy(update=verdict)
            if validation.fail_to_pass:  # the interface and criteria of the tests that really fail and pass
                validated = refresh_interface(env.repo, validated, classify, rules.planning)
                validated = _held_back_when_collateral(validated, validation, rules.environments.collateral_tests)
            store.update_milestone(key, validated)
            log(_verdict_line(validation))
            validations.append(validation)
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)  # on an error, start no further milestone
    if validations and all(validation.reason == "no_tests_ran" for validation in validations):
        cause = _verdict_line(validations[-1]).split("; ")[-1]
        ids = [validation.milestone_id for validation in validations]
        named = ", ".join(ids) if len(ids) <= 5 else f"{', '.join(ids[:5])} and {len(ids) - 5} more"
        valid = [planned.id for planned in store.load_plan(key).milestones if planned.status == "valid"]
        others = f" ({', '.join(valid)} validated before)" if valid else ""
        raise EnvError(
            f"{key}: the test runner could not start for {named} ({env.backend} sandbox){others}: {cause}. "
            "Fix the environment and validate again",
            reason="no_tests_ran",
        )
    return validations


def _held_back_when_collateral(milestone: Milestone, validation: Validation, collateral_tests: str) -> Milestone:
    """A milestone graded only by collateral tests (`environments.collateral_tests: set_aside` kept them because
    nothing else goes FAIL -> PASS) is held back: its tests fail at base only to load, on work no task states."""
    if collateral_tests != "set_aside" or not set(validation.fail_to_pass) <= set(validation.collateral):
        return milestone
    reason = (
        f"collateral: its {len(validation.fail_to_pass)} FAIL_TO_PASS tests all fail at base only to load, on a "
        "private name or on a moved dependency: they check nothing its task states"
    )
    return milestone.model_copy(update={"held_back": [*milestone.held_back, reason]})


def _acceptance(planned: Milestone, validation: Validation) -> dict:
    """The title, text, headlines and flags validation leaves: the task asks for its graded parts and names the
    others as context (`classification.regraded`). A milestone planned before task parts: an untested headline
    moves into the title's "+N more" when another is tested (flag `untested_features`); when none is, the milestone
    is `weak_acceptance`."""
    if planned.parts and validation.fail_to_pass:
        return regraded(planned, validation.ungraded_parts)
    flags = set(planned.flags) - {"weak_acceptance"}
    retitled = title_without_untested(planned.title, planned.headlines, validation.untested_headlines)
    if retitled:
        title, headlines = retitled
        return {"title": title, "headlines": headlines, "flags": sorted(flags | {"untested_features"})}
    return {"flags": sorted(flags | ({"weak_acceptance"} if validation.untested_headlines else set()))}


def _other_kinds_verdict(store: Store, key: str, planned: Milestone, env: Environment) -> bool:
    """`planned` holds a valid verdict that the other sandbox kind gave (its image says which)."""
    if planned.status != "valid" or not store.validation_file(key, planned.id).exists():
        return False
    image = store.load_validation(key, planned.id).image
    return bool(image) and image.startswith("local:") != (env.backend != "docker")


def _verdict_line(validation: Validation) -> str:
    """One console line per verdict; an environment failure says its real cause (the detail's last line, e.g.
    `No module named 'harnessforge'`), not only its reason."""
    why = f" ({validation.reason})" if validation.reason else ""
    line = (
        f"{validation.milestone_id}: {validation.status}{why}: {len(validation.fail_to_pass)} FAIL_TO_PASS "
        f"of {len(validation.candidates)} candidates, {len(validation.pass_to_pass)} PASS_TO_PASS, "
        f"{len(validation.flaky)} flaky"
    )
    cause = [text.strip() for text in (validation.detail or "").splitlines() if text.strip()]
    return line + (f"; {cause[-1][:200]}" if validation.status == "env_error" and cause else "")


def grade_patch(
    store: Store, arg: str, milestone_id: str, candidate: bytes, rules: Rules, backend: Backend = "auto"
) -> Grade:
    """Grade a candidate diff against a validated milestone of the store, in a fresh sandbox
    (`candidate_grading.grade_candidate` does the grading; this finds what it needs)."""
    spec = spec_for(store, arg)
    key = spec.key
    milestone = store.load_milestone(key, milestone_id)
    validation = store.load_validation(key, milestone_id)
    if validation.status != "valid":
        raise EnvError(f"{key} {milestone_id} is {validation.status}, not valid: nothing to grade against")
    _, test_patch = store.read_patches(key, milestone_id)
    env = Environment(store, spec, rules, backend)
    opener = env.opener(milestone, {"harnessforge.stage": "grade"})
    return grade_candidate(opener, milestone, validation, test_patch, candidate, env.recipe(milestone), rules)


__all__ = ["Environment", "build", "grade_patch", "validate"]
