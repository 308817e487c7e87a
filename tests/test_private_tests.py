"""A FAIL_TO_PASS test of a private helper the change adds is set aside when other tests grade the milestone."""

from __future__ import annotations

from harnessforge.envs.classification import Classification
from harnessforge.envs.private_tests import private_reader, set_aside_private
from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import START
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules


def test_a_test_calling_a_new_private_helper_is_read_as_testing_it(tmp_path):
    """go-pretty's `TestColor_areColorsOnInTheEnv` and `objAsSlice` (sixteenth set): tests of helpers a reader
    said no text could specify. A helper that existed at base, a public name, a one-word local are no match."""
    builder = RepoBuilder(tmp_path / "repo", START)
    module = "def _old(x):\n    return x\n\n\ndef render(x):\n    return _old(x)\n"
    go = 'package table\n\nfunc Render() string {\n\treturn ""\n}\n'
    base = builder.commit("Base", {"src/pkg/render.py": module, "table/render.go": go})
    module += "\n\ndef _normalize(x):\n    return x.strip()\n\n\n"
    module += "def render_all(xs):\n    return [_normalize(x) for x in xs]\n"
    go += "\nfunc objAsSlice(in any) []any {\n\treturn nil\n}\n\nfunc result() int {\n\treturn 0\n}\n"
    tests = (
        "from pkg.render import _normalize, _old, render_all\n\n\n"
        "def test_render_all():\n    assert render_all([' a']) == ['a']\n\n\n"
        "def test_normalize():\n    assert _normalize(' a') == 'a'\n\n\n"
        "def test_old():\n    assert _old(1) == 1\n"
    )
    go_tests = (
        'package table\n\nimport "testing"\n\n'
        "func TestObjAsSlice(t *testing.T) {\n\t_ = objAsSlice(1)\n}\n\n"
        "func TestRender(t *testing.T) {\n\tresult := Render()\n\t_ = result\n}\n"
    )
    verify = builder.commit(
        "Normalize",
        {
            "src/pkg/render.py": module,
            "tests/test_render.py": tests,
            "table/render.go": go,
            "table/render_test.go": go_tests,
        },
    )
    why = private_reader(
        GitRepo(builder.path),
        base,
        verify,
        ["tests/test_render.py", "table/render_test.go"],
        ["src/pkg/render.py", "table/render.go"],
    )
    assert why("tests/test_render.py::test_normalize") == "it tests `_normalize`, a private helper the change adds"
    assert why("table::TestObjAsSlice") == "it tests `objAsSlice`, a private helper the change adds"
    assert [why(test) for test in ("tests/test_render.py::test_render_all", "tests/test_render.py::test_old")] == [
        "",
        "",
    ]
    assert why("table::TestRender") == ""  # `result` is a local there, and one word: no helper's name


def test_private_tests_are_set_aside_unless_they_are_all_that_grades():
    why = {"t::test_normalize": "it tests `_normalize`, a private helper the change adds"}.get
    verdict = Classification(fail_to_pass=["t::test_normalize", "t::test_render_all"])
    aside = set_aside_private(verdict, lambda test: why(test, ""))
    assert aside.fail_to_pass == ["t::test_render_all"]
    assert aside.rejected == {"t::test_normalize": "private: it tests `_normalize`, a private helper the change adds"}
    alone = Classification(fail_to_pass=["t::test_normalize", "t::test_loads"], collateral=["t::test_loads"])
    assert set_aside_private(alone, lambda test: why(test, "")) == alone  # the rest is collateral: all it has
    assert load_rules().environments.private_tests == "set_aside"  # `graded` keeps them (validation reads it)
