"""A Python project's requirements come from real parsers (PEP 508, tox's factor syntax, pip's
requirement files), and the project itself is never installed from the index; its import names come
from its build config (the environments built from them: test_python_envs.py)."""

from __future__ import annotations

import textwrap

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harnessforge.envs.python_deps import condition_holds, expand_braces, factor_filter, read_python_deps
from harnessforge.errors import ConfigError


def deps(files: dict[str, str]):
    data = {path: text.encode() for path, text in files.items()}
    return read_python_deps(list(data), data.get)


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(line).name) for line in requirements}


# ---- tox factors --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, taken",
    [
        ("mypy: mypy", None),
        ("docs: sphinx", None),
        ("py3{10,11}: packaging", "packaging"),
        ("py{310-313}: ranged", "ranged"),
        ("py3{8,9}: old", None),
        ("!py38: not-old", "not-old"),
        ("!pypy: cpython-only", "cpython-only"),
        ("py38: only-old", None),
        ("py311-tests: both", "both"),
        ("py311-django: needs-django", None),
        ("tests,lint: either", "either"),
        ("!pypy-!mypy: neither", "neither"),
        ("py3.11: dotted", "dotted"),
        ("3.11: bare", "bare"),
        ("3.1{0,1}-tests: structlog-style", "structlog-style"),
        ("py{310,311}-{tests,mypy}: product", "product"),
        ("coverage: coverage", None),
        ("pytestmain: git+https://github.com/pytest-dev/pytest.git@main", None),
        ("attrs>=22", "attrs>=22"),
        ("pkg @ https://files.pythonhosted.org/x.whl", "pkg @ https://files.pythonhosted.org/x.whl"),
    ],
)
def test_tox_factor_conditions_are_decided_for_a_plain_test_env(line, taken):
    assert list(factor_filter([line])) == ([taken] if taken else [])


def test_brace_expansion_and_conditions():
    assert expand_braces("py3{10,11}-{a,b}") == ["py310-a", "py310-b", "py311-a", "py311-b"]
    assert expand_braces("py3{10-12}") == ["py310", "py311", "py312"]
    assert condition_holds("py38,tests", {"tests"}) and not condition_holds("py38-tests", {"tests"})
    assert condition_holds("!py38", set()) and not condition_holds("!py38", {"py38"})


def test_tox_ini_real_world_spellings():
    tox = """
[tox]
envlist = py3{10,11,12}, mypy, docs

[base]
deps =
    attrs>=22.2
    hypothesis

[testenv]
deps =
    {[base]deps}
    -r{toxinidir}/requirements/tests.txt
    min: -r requirements/tests-min.txt
    -c constraints.txt
    mypy: mypy
    py3{10,11}: tomli
    !py38: exceptiongroup ; python_version < "3.11"
    {env:EXTRA_DEPS}
    {env:PINNED:freezegun==1.5}
    {envsitepackagesdir}/x
    coverage[toml] >= 5.0  # inline comment
    pytest-xdist \\
        >=3
extras = tests
dependency_groups =
    tests: testing
    mypy: typing

[testenv:docs]
deps = sphinx
"""
    found = deps(
        {
            "pyproject.toml": (
                '[project]\nname = "mypkg"\n[project.optional-dependencies]\ntests = ["mypkg[toml]", '
                '"pytest-mock"]\ntoml = ["tomlkit"]\n[dependency-groups]\ntesting = ["time-machine"]\n'
                'typing = ["mypy"]\n[build-system]\nrequires = ["flit_core>=3.4"]\n'
            ),
            "tox.ini": tox,
            "requirements/tests.txt": "pytest==8.3.3\n",
            "requirements/tests-min.txt": "werkzeug==2.0.0\n",
            "requirements-dev.txt": "black==1.0\n",  # tox names its files: the glob is not read
            "constraints.txt": "attrs<99\n",
        }
    )
    assert names(found.requirements) == {
        "attrs",
        "hypothesis",
        "pytest",
        "tomli",
        "exceptiongroup",
        "freezegun",
        "coverage",
        "pytest-xdist",
        "pytest-mock",
        "tomlkit",
        "time-machine",
        "flit-core",
    }
    assert 'exceptiongroup; python_version < "3.11"' in found.requirements and "pytest-xdist>=3" in found.requirements
    assert "freezegun==1.5" in found.requirements and "coverage[toml]>=5.0" in found.requirements
    assert not {"mypy", "werkzeug", "black", "sphinx", "mypkg"} & names(found.requirements)
    assert found.skipped == ["tox.ini [testenv]: {envsitepackagesdir}/x (a tox substitution with no value here)"]


def test_tox_envname_is_the_plain_env_this_interpreter_runs():
    """bidict (nineteenth set): `deps = -r dev-deps/{envname}/test.txt` over `envlist = python3.{12,11,...}`; the
    substitution was skipped, hypothesis never installed, and every milestone's conftest failed to import."""
    tox = "[tox]\nenvlist =\n  python3.{12,11,10}\n  pypy3.10\n  lint\n\n"
    tox += "[testenv]\ndeps = -r dev-deps/{envname}/test.txt\n"
    found = deps(
        {
            "tox.ini": tox,
            "dev-deps/python3.11/test.txt": "hypothesis==6.0\n",
            "dev-deps/python3.12/test.txt": "hypothesis==7.0\n",
        }
    )
    assert "hypothesis==6.0" in found.requirements and found.skipped == []


def test_tox_sections_for_a_plain_env_and_tox_toml():
    ini = "[testenv]\ndeps = base-only\n[testenv:py{310,311}]\ndeps = py311-section\n[testenv:lint]\ndeps = ruff\n"
    assert names(deps({"tox.ini": ini}).requirements) == {"pytest", "py311-section"}
    toml = (
        '[project]\nname = "Flask"\n[dependency-groups]\nlocal = ["asgiref", "flask[dotenv]"]\n'
        '[project.optional-dependencies]\ndotenv = ["python-dotenv"]\n'
        '[tool.tox.env_run_base]\ndependency_groups = ["local"]\ndeps = ["greenlet", {replace = "ref"}]\n'
        '[tool.tox.env.typing]\ndeps = ["mypy"]\n[build-system]\nrequires = ["flit_core<4"]\n'
    )
    found = deps({"pyproject.toml": toml})
    assert names(found.requirements) == {"pytest", "asgiref", "python-dotenv", "greenlet", "flit-core"}
    assert found.skipped == ["pyproject.toml [tool.tox]: {'replace': 'ref'} (a tox TOML expression, not a requirement)"]
    legacy = '[project]\nname = "x"\n[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ndeps =\n  tests: legacy\n"""\n'
    assert "legacy" in names(deps({"pyproject.toml": legacy}).requirements)


# ---- self-references ------------------------------------------------------------------------------
def test_the_project_is_never_a_requirement_its_extras_are():
    pyproject = """
[project]
name = "My_Pkg"
dependencies = ["attrs"]
[project.optional-dependencies]
tests = ["my-pkg[toml,color]", "pytest>=7"]
toml = ["tomli; python_version < '3.11'", "my.pkg[cycle]"]
color = ["colorama"]
cycle = ["My-Pkg[toml]"]
dev = ["my_pkg[tests]"]
docs = ["sphinx"]
[build-system]
requires = ["setuptools>=64"]
"""
    tox = "[testenv]\ndeps =\n    -e .[docs]\n    my-pkg[docs]\n    .\n    {toxinidir}\n    -e {toxinidir}[color]\n"
    found = deps({"pyproject.toml": pyproject, "tox.ini": tox, "requirements.txt": "-e .[tests]\n"})
    assert "my-pkg" not in names(found.requirements) and "my_pkg" not in names(found.requirements)
    assert names(found.requirements) == {"attrs", "pytest", "tomli", "colorama", "sphinx", "setuptools"}
    assert 'tomli; python_version < "3.11"' in found.requirements
    assert found.skipped == []
    # the marker of a self-reference carries over to what its extra brings
    marked = deps(
        {
            "pyproject.toml": (
                '[project]\nname = "p"\n[project.optional-dependencies]\n'
                'test = [\'p[x]; sys_platform == "linux"\']\nx = ["lxml"]\n'
            )
        }
    )
    assert 'lxml; sys_platform == "linux"' in marked.requirements
    missing = deps({"pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["p[nope]"]\n'})
    assert missing.skipped == ["extra test: [nope] (the project has no such extra)"]


def test_setup_py_and_setup_cfg_literal_arguments():
    setup_py = textwrap.dedent(
        """
        from setuptools import find_packages, setup
        REQUIRES = ["requests>=2", "idna"]
        setup(
            name="legacy-pkg",
            install_requires=REQUIRES,
            extras_require={"test": ["legacy_pkg[socks]", "pytest-mock"], "socks": "PySocks"},
            tests_require=["responses"],
            packages=find_packages(where="src", exclude=["tests"]),
            package_dir={"": "src"},
        )
        """
    )
    found = deps({"setup.py": setup_py, "src/legacy_pkg/__init__.py": "", "src/legacy_pkg/sub/__init__.py": ""})
    assert names(found.requirements) == {
        "pytest",
        "requests",
        "idna",
        "pysocks",
        "pytest-mock",
        "responses",
        "setuptools",
        "wheel",
    }
    assert found.packages == ["legacy_pkg"]
    cfg = "[metadata]\nname = cfgpkg\n[options]\ninstall_requires =\n    click>=8\npackages = find:\npackage_dir =\n"
    cfg += "    =lib\n[options.extras_require]\ntesting =\n    cfgpkg[yaml]\nyaml = pyyaml\n"
    found = deps({"setup.cfg": cfg, "setup.py": "import setuptools; setuptools.setup()", "lib/cfgpkg/__init__.py": ""})
    assert names(found.requirements) == {"pytest", "click", "pyyaml", "setuptools", "wheel"} and found.packages == [
        "cfgpkg"
    ]
    # setup.py that is not Python: its arguments stay unknown, nothing fails
    assert deps({"setup.py": "setup(\n", "mod.py": ""}).packages == ["mod"]


# ---- requirement files --------------------------------------------------------------------------
def test_requirement_files_with_includes_markers_hashes_and_options():
    found = deps(
        {
            "requirements/dev.txt": textwrap.dedent(
                """\
            # tools
            --index-url https://pypi.org/simple
            -i https://pypi.org/simple
            --pre
            --requirement=base.txt
            -r ../requirements/base.txt
            -c ../constraints.txt
            pytest-cov==5.0.0 \\
                --hash=sha256:4f0764a1219df53214206bf1feea4633c3b558a2925c8b59f144f682861ce653 \\
                --hash=sha256:5837b58e9f6ebd335b0f8060eecce69b662415b16dc503883a02f45dfeb14857
            mock>=4 ; python_version < "3.8"
            -e git+https://github.com/o/r.git#egg=r
            r2 @ git+https://github.com/o/r2.git
            wheelhouse @ https://files.pythonhosted.org/packages/w-1.0-py3-none-any.whl
            ${TOKEN_PACKAGE}
            --frobnicate
            -r missing.txt
            ./vendored/thing
            """
            ),
            "requirements/base.txt": "-r dev.txt\nattrs>=22\n",  # a cycle back to dev.txt
            "constraints.txt": "attrs<30\n",
        }
    )
    assert found.requirements == sorted(
        [
            "pytest",
            "attrs>=22",
            "pytest-cov==5.0.0",
            'mock>=4; python_version < "3.8"',
            "wheelhouse @ https://files.pythonhosted.org/packages/w-1.0-py3-none-any.whl",
        ]
    )
    reasons = {entry.split(" (", 1)[1] for entry in found.skipped}
    assert len(found.skipped) == 6 and all(s.startswith("requirements/dev.txt: ") for s in found.skipped)
    assert "unknown pip option --frobnicate)" in reasons and "no such file in the repository)" in reasons
    assert "an environment variable pip would substitute)" in reasons
    assert "a local path other than the project: not installed)" in reasons


def test_a_test_folders_requirements_are_read_and_docs_ones_are_not():
    """packaging's noxfile installs `tests/requirements.txt` (`pretend`); without it five test modules did not
    import at either end and three milestones were env errors."""
    found = deps(
        {
            "tests/requirements.txt": "pretend\npytest>=6.2.0\n",
            "docs/requirements.txt": "furo\n",
            "tasks/requirements.txt": "invoke\n",
        }
    )
    assert names(found.requirements) == {"pytest", "pretend"}


def test_a_dev_group_is_read_only_without_a_test_group():
    """filelock 3.30: `dev` includes `docs`, whose Sphinx plugin needs a newer Python than the image's, and the image
    failed to build; its `test` group is what the tests need. A project with only `dev` still gets it."""
    groups = '[dependency-groups]\ndev = [{include-group = "docs"}, {include-group = "test"}]\n'
    groups += 'docs = ["sphinx-autodoc-typehints>=3.9.11"]\ntest = ["pytest-timeout>=2.4"]\n'
    found = deps({"pyproject.toml": '[project]\nname = "filelock"\n' + groups})
    assert names(found.requirements) - {"setuptools", "wheel"} == {"pytest", "pytest-timeout"}  # (no build system)
    only_dev = deps({"pyproject.toml": '[project]\nname = "x"\n[dependency-groups]\ndev = ["hypothesis"]\n'})
    assert names(only_dev.requirements) - {"setuptools", "wheel"} == {"pytest", "hypothesis"}


def test_pip_compile_in_files_yield_to_their_txt():
    found = deps({"requirements/test.in": "pytest\n", "requirements/test.txt": "pytest==8.3.3\n"})
    assert found.requirements == ["pytest", "pytest==8.3.3"]


@pytest.mark.parametrize(
    "line",
    ["pytest>=7 pytest-cov", "foo==", "bar[", "baz >= 1.0 ; python_version < '3.8", "==1.0", "qux (>=1.0"],
)
def test_unparsable_lines_are_reported_and_skipped(line):
    found = deps({"requirements.txt": f"attrs\n{line}\nidna\n"})
    assert found.requirements == ["attrs", "idna", "pytest"]
    (entry,) = found.skipped
    assert entry.startswith(f"requirements.txt: {line} (not a PEP 508 requirement: ") and "\n" not in entry


def test_broken_tox_ini_and_setup_cfg_are_reported_not_fatal():
    found = deps({"tox.ini": "[testenv\ndeps = x\n", "setup.cfg": "not ini at all\n[", "requirements.txt": "six\n"})
    assert found.requirements == ["pytest", "six"]
    assert len(found.skipped) == 1 and found.skipped[0].startswith("tox.ini: not a valid INI file: ")


def test_invalid_pyproject_is_one_clear_error():
    with pytest.raises(ConfigError, match="^pyproject.toml is not valid TOML: ") as e:
        deps({"pyproject.toml": "[project\nname = 'x'\n"})
    assert "\n" not in str(e.value)


# ---- import names -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "files, expected",
    [
        ({"pyproject.toml": '[tool.setuptools]\npackages = ["pluggy", "pluggy.sub"]\n'}, ["pluggy"]),
        (
            {
                "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["src"]\ninclude = ["core*"]\n',
                "src/core/__init__.py": "",
                "src/other/__init__.py": "",
            },
            ["core"],
        ),
        ({"pyproject.toml": '[tool.flit.module]\nname = "more_itertools"\n'}, ["more_itertools"]),
        ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/structlog"]\n'}, ["structlog"]),
        ({"pyproject.toml": '[tool.poetry]\npackages = [{include = "poetic", from = "src"}]\n'}, ["poetic"]),
        ({"pyproject.toml": '[tool.setuptools]\npy-modules = ["single"]\n'}, ["single"]),
        ({"httpx/__init__.py": "", "tests/__init__.py": "", "docs/conf.py": "", "setup.py": ""}, ["httpx"]),
        ({"src/humanize/__init__.py": "", "src/humanize/time.py": "", "tests/test_time.py": ""}, ["humanize"]),
        ({"six.py": "", "setup.py": "", "conftest.py": "", "test_six.py": "", "noxfile.py": ""}, ["six"]),
        ({"README.md": ""}, []),
    ],
)
def test_import_names(files, expected):
    assert deps(files).packages == expected
