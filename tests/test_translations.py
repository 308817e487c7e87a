"""Translations a project compiles at build time (issue 31: python-humanize's translation features, 8 of its 17
milestones, validated untested): each checkout compiles the tracked gettext catalogs whose `.mo` git ignores,
so a translation's tests run instead of skipping, and a fixed translation is graded FAIL -> PASS."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

import pytest

from harnessforge.envs.environment import validate
from harnessforge.envs.recipes import COMPILE_TRANSLATIONS, python_recipe
from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import package_pyproject
from harnessforge.mining.planner import plan
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.helpers import one_run_per_side

GREET = '''"""Greetings in the user's language, from gettext catalogs compiled at build time."""

import gettext
import os

LOCALE = os.path.join(os.path.dirname(__file__), "locale")


def hello(language: str = "en") -> str:
    """FileNotFoundError when the language's catalog is not compiled."""
    return gettext.translation("greet", LOCALE, languages=[language], fallback=language == "en").gettext("Hello")
'''
CATALOG = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "Hello"\nmsgstr "{word}"\n'
TEST = """import pytest

from greet import hello


def test_english():
    assert hello() == "Hello"


def test_french():
    try:
        assert hello("fr") == "{word}"
    except FileNotFoundError:
        pytest.skip("compile the catalogs first (msgfmt)")
"""
FRENCH = "greet/locale/fr/LC_MESSAGES/greet.po"


@pytest.fixture(scope="module")
def greet(tmp_path_factory):
    b = RepoBuilder(tmp_path_factory.mktemp("translations") / "greet", datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    b.git("remote", "add", "origin", "https://github.com/harnessforge-examples/greet.git")
    pyproject = package_pyproject("greet", "Greetings")
    files = {"pyproject.toml": pyproject.format(version="0.1.0"), ".gitignore": "*.mo\n", "greet/__init__.py": GREET}
    b.commit(
        "Greetings in English and French",
        files | {FRENCH: CATALOG.format(word="Bonjour"), "tests/test_greet.py": TEST.format(word="Bonjour")},
    )
    b.tag("v0.1.0")
    fix = {FRENCH: CATALOG.format(word="Salut"), "tests/test_greet.py": TEST.format(word="Salut")}
    b.squash_pr(
        2,
        "French greets with Salut",
        fix | {"greet/__init__.py": GREET.replace("build time.", "build time (fr: Salut).")},
    )
    notes = "## 0.2.0\n\n- French greets with Salut (#2)\n"
    b.commit("Release 0.2.0", {"CHANGELOG.md": notes, "pyproject.toml": pyproject.format(version="0.2.0")})
    b.tag("v0.2.0")
    return str(b.path)


def test_only_a_project_with_catalogs_compiles_them():
    assert COMPILE_TRANSLATIONS in python_recipe("base", ["pyproject.toml", FRENCH], lambda path: None).prepare
    assert COMPILE_TRANSLATIONS not in python_recipe("base", ["pyproject.toml"], lambda path: None).prepare


def test_a_fixed_translation_is_graded_by_its_test(greet, tmp_path):
    rules = load_rules()
    rules = one_run_per_side(rules.model_copy(update={"planning": rules.planning.model_copy(update={"min_lines": 1})}))
    store = Store(tmp_path / "store")
    key = plan(store, greet, rules, "v0.1.0", "v0.2.0").plan.repo.key
    (validation,) = validate(store, key, rules, backend="local", log=lambda *_: None)
    # compiled at base ("Bonjour": the new test fails) and at verify ("Salut": it passes)
    assert validation.status == "valid", validation.detail
    assert validation.fail_to_pass == ["tests/test_greet.py::test_french"]
    status = subprocess.run(["git", "-C", greet, "status", "--porcelain"], capture_output=True, text=True).stdout
    assert status == ""  # the repository itself is untouched: catalogs compile in the sandbox's checkout
