"""The dependencies a change moves, said in its task: cobra's man-page test passes only with the go-md2man the
change bumps, and a Dev who is not told cannot find it."""

from __future__ import annotations

import json

from harnessforge.envs.dependency_changes import changed_dependencies, dependencies, dependency_changes
from harnessforge.envs.milestone_interface import refresh_interface
from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import START
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from tests.helpers import milestone_between

GO_MOD = (
    "module github.com/spf13/cobra\n\ngo 1.15\n\n"
    "require (\n\tgithub.com/cpuguy83/go-md2man/v2 v2.0.4\n\tgopkg.in/yaml.v3 v3.0.1\n)\n"
)


def test_each_manifest_reads_its_dependencies():
    assert dependencies("go.mod", GO_MOD) == {
        "github.com/cpuguy83/go-md2man/v2": "v2.0.4",
        "gopkg.in/yaml.v3": "v3.0.1",
    }
    package = {"dependencies": {"lru-cache": "^6.0.0"}, "devDependencies": {"@npmcli/template-oss": "4.21.3"}}
    assert dependencies("package.json", json.dumps(package)) == {"lru-cache": "^6.0.0"}  # not the tooling
    pyproject = (
        '[project]\ndependencies = ["click>=8", "rich"]\n[project.optional-dependencies]\ncli = ["typer==0.9"]\n'
    )
    assert dependencies("pyproject.toml", pyproject) == {"click": ">=8", "rich": "any version"}  # extras: tooling
    cargo = '[dependencies]\nserde = "1.0"\n[dev-dependencies]\ntrybuild = { version = "1.0.49" }\n'
    assert dependencies("Cargo.toml", cargo) == {"serde": "1.0", "trybuild": "1.0.49"}
    assert dependencies("package.json", "{not json") is None and dependencies("setup.py", "") is None
    assert dependency_changes({"a": "1", "b": "2"}, {"a": "1.1", "c": "3"}) == [
        "`a` 1 → 1.1",
        "`b` removed",
        "`c` added (3)",
    ]


def test_a_bumped_module_is_said_in_the_task(tmp_path):
    builder = RepoBuilder(tmp_path / "repo", START)
    base = builder.commit("Docs", {"go.mod": GO_MOD, "doc/man.go": "package doc\n", "README.md": "# cobra\n"})
    bumped = GO_MOD.replace("v2.0.4", "v2.0.6")
    verify = builder.commit("Man pages", {"go.mod": bumped, "doc/man.go": "package doc\n\nfunc Man() {}\n"})
    repo = GitRepo(builder.path)
    assert changed_dependencies(repo, base, verify, ["doc/man.go", "docs/go.mod"]) == []  # a docs site's own
    assert changed_dependencies(repo, base, verify, ["doc/man.go", "go.mod"]) == [
        "`github.com/cpuguy83/go-md2man/v2` v2.0.4 → v2.0.6"
    ]
    assert changed_dependencies(repo, base, verify, ["README.md", "go.mod"]) == []  # no Go code changed with it
    docs = builder.commit("Docs site", {"package.json": '{"dependencies": {"marked": "^16.3.0"}}'})
    site = builder.commit("Bump marked", {"package.json": '{"dependencies": {"marked": "^16.4.1"}}', "x.go": ""})
    assert changed_dependencies(repo, docs, site, ["package.json", "x.go"]) == []  # lo's docs tooling in a Go repo
    assert changed_dependencies(repo, base, docs, ["package.json", "x.js"]) == []  # created: taken over, not moved
    title, description = "Man pages see also", "Man pages list their see-also pages."
    milestone = milestone_between(base, verify, title, description, ["doc/man.go", "go.mod"])
    planning = load_rules().planning
    task = refresh_interface(repo, milestone, FileClassifier(planning), planning).task("hidden")
    assert "## Dependencies" in task and "- `github.com/cpuguy83/go-md2man/v2` v2.0.4 → v2.0.6" in task
    assert "Context, not work to do" in task  # a reader took the list for bumps asked of the Dev
