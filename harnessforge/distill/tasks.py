"""Verified task cards: each valid milestone as a self-contained task, with what runs taught us.

A card holds the environment (image tag and a Dockerfile that rebuilds it: the base image, the
recipe's install steps, the repository from a bundle of its history up to the base commit), the
statement, FAIL_TO_PASS / PASS_TO_PASS and a command that runs them, the shortest passing run as
reference, the hint ladder with how many passing runs needed each level, and the Reviewer's grade
of the reference run.
"""

from __future__ import annotations

import shlex
from collections import Counter

from .. import __version__
from ..envs.images import OFFLINE_VARS
from ..envs.recipes import DEPS_DIR, dependency_files
from ..envs.workspace import SANDBOX_UID, SANDBOX_USER
from ..errors import ArtifactError
from ..gitio import GitRepo
from ..models.common import utcnow
from ..models.distill import CardHint, Review, TaskCard
from ..models.env import Recipe
from ..store import Store

WORKDIR = "/workspace"


def dockerfile(recipe: Recipe, base_commit: str) -> str:
    """The environment as a Dockerfile; beside it `deps/` (the dependency manifests the install steps
    read) and `repo.bundle` (the history up to the base commit). Install runs without the offline
    switches the tests run with, as in `envs.images`."""
    install_env = {k: v for k, v in sorted(recipe.env.items()) if k not in OFFLINE_VARS}
    lines = [f"FROM {recipe.base_image}", "USER root"]
    lines += [f"RUN id -u {SANDBOX_USER} >/dev/null 2>&1 || useradd -u {SANDBOX_UID} -m {SANDBOX_USER}"]
    lines += [f"COPY deps/ {DEPS_DIR}/", f"RUN chmod -R a+rX {DEPS_DIR}"]
    lines += [f"ENV {k}={shlex.quote(v)}" for k, v in install_env.items()]
    lines += [f"RUN {step}" for step in recipe.install]
    lines += [f"ENV {k}={shlex.quote(v)}" for k, v in sorted(recipe.env.items()) if k not in install_env]
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
    ids = " ".join(shlex.quote(t) for t in tests)
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
    rules_hash: str,
    allow_synthetic: bool = True,
    only: tuple[str, str] | None = None,
) -> list[TaskCard]:
    """A card for every valid milestone of every planned repo (or for milestone `only`: (repo, id))."""
    cards = []
    for key in [only[0]] if only else store.repo_keys():
        try:
            plan = store.load_plan(key)
            images = store.load_images(key)
        except ArtifactError:
            continue  # not planned, or no environment built: no task to pose
        for m in plan.milestones:
            record = images.for_milestone(m.id)
            if m.status != "valid" or record is None or (only and m.id != only[1]):
                continue
            validation = store.load_validation(key, m.id)
            repo, at = GitRepo(store.git_cache(key)), m.verify_commit
            deps = dependency_files(record.recipe, repo.files(at), lambda p, r=repo, c=at: r.show(c, p))
            ladder = store.load_hints(key, m.id)
            runs = [r for r in reviews if (r.repo, r.milestone_id) == (key, m.id)]
            runs = [r for r in runs if allow_synthetic or not r.synthetic]
            passed = [r for r in runs if r.status == "PASS"]
            solved = Counter(r.max_hint_level for r in passed)
            best = min(passed, key=lambda r: (r.synthetic, r.difficulty, r.run_id), default=None)
            cards.append(TaskCard(
                task_id=f"{key}-{m.id}", repo=key, milestone_id=m.id, title=m.title, statement=m.brief,
                base_commit=m.base_commit, verify_commit=m.verify_commit, image=record.tag,
                dockerfile=dockerfile(record.recipe, m.base_commit),
                dependency_files={p: d.decode(errors="replace") for p, d in deps.items()},
                test_cmd=test_command(record.recipe, validation.fail_to_pass + validation.pass_to_pass),
                fail_to_pass=validation.fail_to_pass, pass_to_pass=validation.pass_to_pass,
                reference_run=best.run_id if best else None,
                hint_ladder=[CardHint(level=h.level, name=h.name, content=h.content, solved_runs=solved[h.level])
                             for h in ladder.levels if not h.empty],
                difficulty=best.difficulty if best else None, rl_value=best.rl_value if best else None,
                tags=[record.recipe.language, record.recipe.runner, *([m.release] if m.release else [])],
                provenance={"repo": key, "commits": m.commits, "harness_version": __version__, "rules_hash": rules_hash,
                            "created_at": utcnow().isoformat(), "release": m.release},
                synthetic_reference=bool(best and best.synthetic),
            ))  # fmt: skip
    return cards
