"""A milestone with its task's interface, criteria, documentation and dependencies, refreshed from its diff: at
planning for its traced tests, at validation for its FAIL_TO_PASS; and whether the task is held back.

`interface` reads what the tests need; this module puts it on the milestone, names the feature each criterion
checks when the task asks for several, and measures the text as a reader would.
"""

from __future__ import annotations

import re

from ..files import LANGUAGE_EXTENSIONS, FileClassifier
from ..gitio import GitRepo
from ..models import AcceptanceCriterion, Milestone
from ..models.task import asked, held_back
from ..rules import PlanningRules
from ..text_lint import repeated_title, task_problems
from .classification import names_in_test_id
from .dependency_changes import changed_dependencies
from .documentation import documented
from .interface import Interface, read_interface

_DOCUMENTED_STRING = re.compile(r"--?[A-Za-z][\w-]+|[A-Za-z_]\w*")  # a string a page may name: a flag, a key


def with_interface(milestone: Milestone, interface: Interface) -> Milestone:
    """`milestone` with this interface and its tests' criteria (the release notes' criteria stay), and how
    many of the new names its task text names."""
    notes = [criterion for criterion in milestone.acceptance_criteria if criterion.source != "test"]
    updated = milestone.model_copy(
        update={
            "interface": interface.items,
            "acceptance_criteria": notes + interface.criteria,
            "documentation": interface.documentation,
        }
    )
    text = updated.task()
    named = sum(1 for item in interface.items if item.short in text)
    warnings = list(dict.fromkeys([*milestone.quality.warnings, *interface.warnings, *repeated_title(text)]))
    problems = milestone.quality.problems
    if milestone.parts:  # the asked parts' own holes, and what the whole task shows a reader
        own = [problem for index in asked(milestone.parts) for problem in milestone.parts[index].problems]
        problems = list(dict.fromkeys([*own, *task_problems(text)]))
    quality = updated.quality.model_copy(
        update={
            "interface_names": len(interface.items),
            "interface_named": named,
            "warnings": warnings,
            "problems": problems,
        }
    )
    return updated.model_copy(update={"quality": quality})


def source_files(milestone: Milestone, classify: FileClassifier) -> list[str]:
    """The milestone's changed source files of a language whose names the interface reads."""
    code = tuple(extension for extensions in LANGUAGE_EXTENSIONS.values() for extension in extensions)
    return [path for path in milestone.changed_files if classify.is_source(path) and path.endswith(code)]


def refresh_interface(
    repo: GitRepo, milestone: Milestone, classify: FileClassifier, planning: PlanningRules | None = None
) -> Milestone:
    """`milestone` with the interface and test criteria of its FAIL_TO_PASS tests (its traced acceptance
    tests before validation), quoting up to `planning.assertion_examples` (and `new_value_examples`) checks per
    test and `planning.documentation_lines` of the user documentation it adds about the names those tests use;
    and whether its task is held back (`models.task.held_back`). No `planning`: two examples, nothing more."""
    examples, new_value_examples, documentation_lines, task_examples = (
        (planning.assertion_examples, planning.new_value_examples, planning.documentation_lines, planning.task_examples)
        if planning
        else (2, 0, 0, None)
    )
    sources = source_files(milestone, classify)
    tests = milestone.fail_to_pass or milestone.acceptance_tests
    interface = read_interface(
        repo,
        milestone.base_commit,
        milestone.verify_commit,
        tests,
        milestone.test_files,
        sources,
        milestone.id,
        examples,
        new_value_examples,
        task_examples,
    )
    asked_parts = [milestone.parts[index] for index in asked(milestone.parts) if milestone.parts[index].heading]
    features = [(part.heading, part.tests, part.test_files) for part in asked_parts] or [
        (headline.text, headline.tests, headline.test_files) for headline in milestone.headlines
    ]
    interface.criteria = [_with_headline(criterion, features) for criterion in interface.criteria]
    if documentation_lines:
        names = {item.short for item in interface.items}  # the new names, and the flags and keys the tests pass
        names |= {text for text in interface.used.strings if _DOCUMENTED_STRING.fullmatch(text) and len(text) > 3}
        interface.documentation = documented(
            repo,
            milestone.base_commit,
            milestone.verify_commit,
            [path for path in milestone.changed_files if not classify.is_test(path)],  # a test's data is no page
            names,
            sources,
            documentation_lines,
        )
    updated = with_interface(milestone, interface)
    if planning is None:
        return updated
    moved = changed_dependencies(repo, milestone.base_commit, milestone.verify_commit, milestone.changed_files)
    updated = updated.model_copy(update={"dependencies": moved})
    text = updated.task()
    reasons = held_back(
        updated.description,
        updated.documentation + [item.model_copy(update={"module": ""}).line() for item in updated.interface],
        updated.parts,
        planning.min_statement_words,
        planning.max_asked_parts,
        planning.behaviour_keeping_kinds,
        planning.max_task_releases,
        planning.behaviour_change_words,
        len([value for value in interface.pinned if value not in text]),
        planning.max_unstated_values,
        planning.hold_back_ungraded and "weak_acceptance" in updated.flags,
    )
    return updated.model_copy(update={"held_back": reasons})


def _with_headline(
    criterion: AcceptanceCriterion, features: list[tuple[str, list[str], list[str]]]
) -> AcceptanceCriterion:
    """The criterion naming the feature its test checks, when the task asks for several and the test is one
    feature's own (its commits added or changed it): a test named for an issue number (`test_issue_478`) then says
    which promise it grades. `features`: (name, its tests, its test files)."""
    if len(features) < 2 or not criterion.tests:
        return criterion
    names = names_in_test_id(criterion.tests[0])
    path = criterion.tests[0].split("::", 1)[0].split(" > ", 1)[0]
    owners = [name for name, tests, files in features if (names & set(tests) if tests else path in files)]
    if len(owners) != 1:
        return criterion
    text = criterion.text.replace("`: ", f"` (checks: {owners[0]}): ", 1)
    return criterion.model_copy(update={"text": text})
