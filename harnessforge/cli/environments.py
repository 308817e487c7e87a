"""Stage 2 commands: base images, per-repo environment images, leftover containers, validation of
each milestone's tests, and grading one candidate diff."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ..errors import ConfigError, HarnessForgeError
from .context import console, github_factory, out, state
from .options import sandbox_option
from .rendering import missing_images_message, validation_table


def print_escaped(line: str) -> None:
    console.print(escape(line))  # build lines hold [extras] and other brackets rich would read as markup


def bootstrap_base(
    language: list[str] = typer.Option(["python"], "--language", help="Build the base image of these languages"),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists"),
) -> None:
    """Build base images with debootstrap + docker import (for machines without a registry); each
    debootstrap phase is printed as it starts. `env build` does this itself for a missing base."""
    from ..envs import engine
    from ..envs.images import bootstrap_base as bootstrap

    rules = state.rules
    known = rules.environments.base_images
    unknown = [name for name in language if name not in known]
    if unknown:  # before any work, and without an engine
        raise ConfigError(f"unknown language {unknown[0]!r}; known: {', '.join(known)}")
    client = engine.connect()
    for name in language:
        with console.status(f"bootstrapping the {name} base image"):
            tag = bootstrap(client, name, rules.environments, force=force, log=print_escaped)
            out.print(tag)


def build(
    repo: str = typer.Argument(..., help="A planned repo: its key, path, URL or owner/name"),
    milestone: Optional[str] = typer.Option(None, "--milestone", help="Only the image this milestone needs"),
) -> None:
    """Build one image per dependency epoch of a planned repo (cached by the env hash); a missing
    base image is bootstrapped first. Exit 1 when some milestone has no image, after building the rest."""
    from ..envs.environment import build as build_images

    with console.status(f"building environments for {repo}"):
        images = build_images(state.store, repo, state.rules, milestone=milestone, log=print_escaped)
    for record in images.images:
        out.print(f"{record.tag}  {record.recipe.language}/{record.recipe.runner}  {record.log_path}")
    if images.failures:
        raise HarnessForgeError(missing_images_message(images))


def cleanup(
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Only the containers of this run (others' stay)"),
) -> None:
    """Remove every HarnessForge container left behind (e.g. by a killed run); images stay."""
    from ..envs import engine

    out.print(f"removed {engine.cleanup(engine.connect(), run_id)} container(s)")


def validate(
    repo: str = typer.Argument(..., help="A planned repo: its key, path, URL or owner/name"),
    milestone: Optional[str] = typer.Option(None, "--milestone", help="Validate only this milestone (e.g. m03)"),
    repeats: Optional[int] = typer.Option(None, "--repeats", min=1, help="Runs per side (default: rules)"),
    sandbox: str = sandbox_option(),
    workers: int = typer.Option(1, "--workers", min=1, help="Milestones validated at once, each in its own sandbox"),
    force: bool = typer.Option(False, "--force", help="Replace a valid verdict the other sandbox kind gave"),
) -> None:
    """Prove each milestone's tests FAIL at base and PASS at verify; write validation.json."""
    from ..envs.environment import validate as validate_repo

    rules = state.rules
    if repeats:
        environments = rules.environments.model_copy(update={"repeats": repeats})
        rules = rules.model_copy(update={"environments": environments})
    from ..mining.merging import merge_untested
    from ..repos import spec_for

    with console.status(f"validating {repo}"):
        results = validate_repo(
            state.store, repo, rules, milestone, sandbox, console.print, workers=workers, force=force
        )

        def again(milestone_id: str):
            (validation,) = validate_repo(state.store, repo, rules, milestone_id, sandbox, console.print)
            return validation

        github = github_factory(spec_for(state.store, repo))
        merges = merge_untested(state.store, repo, rules, again, github, log=console.print)
    by_id = {validation.milestone_id: validation for validation in results + merges}  # the latest verdicts
    plan = state.store.load_plan(spec_for(state.store, repo).key)
    merged_into = {milestone.id: milestone.merged_into for milestone in plan.milestones if milestone.merged_into}
    out.print(validation_table(by_id.values(), merged_into))


def grade(
    repo: str = typer.Argument(..., help="A validated repo's key"),
    milestone: str = typer.Argument(..., help="Milestone id, e.g. m03"),
    patch: Path = typer.Argument(..., exists=True, dir_okay=False, help="The candidate's diff against base"),
    sandbox: str = sandbox_option(),
) -> None:
    """Grade a candidate diff in a fresh sandbox; prints the grade as JSON, exit 2 if unresolved."""
    from ..diffs import split_diff
    from ..envs.environment import grade_patch

    candidate = patch.read_bytes()
    if candidate.strip() and not split_diff(candidate):
        raise ConfigError(f"patch file {patch}: no `diff --git` section in it (grade takes `git diff` output)")
    result = grade_patch(state.store, repo, milestone, candidate, state.rules, backend=sandbox)
    out.print_json(result.model_dump_json(exclude={"run"}))
    if not result.resolved:
        raise typer.Exit(2)
