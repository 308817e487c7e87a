"""`selfextras`: a package named in its own test extras, with tox factor lines in its deps.

Real projects (structlog, attrs, pluggy, hypothesis...) list themselves in their extras
(`tests = ["selfextras[ini]", "pytest"]`) and install with `pip install -e .[tests]`; their tox.ini
carries tox syntax that is not pip's (`mypy: mypy`, `py3{10,11}: packaging`, `!pypy: pluggy`,
`{env:X}`). Installing those lines naively pulls the released package from the index, which then
shadows the checkout (site-packages comes before `.pth` entries), and `mypy: mypy` breaks pip.

The package uses a src layout (so nothing but an install puts it on `sys.path` first), reads its
output formats from entry points (which exist only when the checkout itself is installed), and takes
its version from git through setuptools-scm, whose `version_file` (`src/selfextras/_version.py`, not
in .gitignore, imported by the package) only an install writes, as humanize's and tenacity's. History:

- v0.1.0: `selfextras.render(text, fmt)` with the `plain` and `upper` formats, registered as
  `selfextras.formats` entry points in pyproject.toml; tests.
- v0.2.0, "Wrapped and boxed output" (PR #2, fixes #1): `selfextras.wrap()` (a new module, the
  package and the formats change) and a `boxed` format registered as a new entry point. Its tests
  fail before it and pass after it, and `test_boxed_format_is_registered` passes only when the
  checkout's own metadata is installed (the registry has no `selfextras`; a `.pth` has no entry
  points). `tests/test_workspace.py` asserts the tests import the checkout, not an installed copy.

The expected recipe: no `selfextras` requirement; `iniconfig` (from the `ini` extra, reached through
`tests` and `-e .[tests]`), `packaging` (`py3{10,11}:` holds for py311), `pluggy` (`!pypy:`) and
the build system's setuptools and setuptools-scm; never `mypy` or `sphinx`; the URL line and the
malformed `pytest>=7 pytest-timeout` line reported in `skipped_requirements`; packages `["selfextras"]`.
"""

from __future__ import annotations

from pathlib import Path

from .common import builder

PYPROJECT = """[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "selfextras"
dynamic = ["version"]
description = "Render text in pluggable formats"
requires-python = ">=3.9"

[project.optional-dependencies]
ini = ["iniconfig>=1"]
tests = ["selfextras[ini]", "pytest>=7"]
dev = ["selfextras[tests]"]

[project.entry-points."selfextras.formats"]
{entry_points}
[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools_scm]
version_file = "src/selfextras/_version.py"

[tool.pytest.ini_options]
testpaths = ["tests"]
"""
ENTRY_POINTS = 'plain = "selfextras.formats:plain"\nupper = "selfextras.formats:upper"\n'
ENTRY_POINTS_020 = ENTRY_POINTS + 'boxed = "selfextras.formats:boxed"\n'

TOX = """[tox]
envlist = py3{10,11,12}, pypy3, mypy, docs

[testenv]
deps =
    -e .[tests]
    mypy: mypy>=1.8
    py3{10,11}: packaging>=23
    !pypy: pluggy
    docs: sphinx
    {env:SELFEXTRAS_EXTRA_DEPS}
    pytest>=7 pytest-timeout
    https://github.com/harnessforge-examples/selfextras-fixtures/archive/main.zip
commands = pytest {posargs}

[testenv:mypy]
commands = mypy src
"""

INIT = '''"""selfextras: render text in pluggable formats."""

from ._version import version as __version__
from .core import known_formats, render
{extra_import}
__all__ = [{names}]
'''

CORE = '''"""Rendering through the formats the installed distributions register."""

from importlib.metadata import entry_points


def known_formats() -> dict:
    """Format name -> function, from the `selfextras.formats` entry points."""
    return {ep.name: ep.load() for ep in entry_points(group="selfextras.formats")}


def render(text: str, fmt: str = "plain") -> str:
    known = known_formats()
    if fmt not in known:
        raise KeyError(f"unknown format {fmt!r}; known: {', '.join(sorted(known))}")
    return known[fmt](text)
'''

FORMATS = '''"""The built-in formats."""


def plain(text: str) -> str:
    return text


def upper(text: str) -> str:
    return text.upper()
'''

FORMATS_BOXED = '''

def boxed(text: str, width: int = 20) -> str:
    """The text wrapped to `width` columns inside a box of `+`, `-` and `|`."""
    from .wrap import wrap

    lines = wrap(text, width)
    inner = max((len(line) for line in lines), default=0)
    border = "+" + "-" * (inner + 2) + "+"
    body = [f"| {line.ljust(inner)} |" for line in lines]
    return "\\n".join([border, *body, border])
'''

WRAP = '''"""Greedy word wrapping that never splits a word shorter than the width."""


def _chunks(word: str, width: int) -> list:
    """A word longer than `width`, cut into pieces of at most `width` characters."""
    return [word[i : i + width] for i in range(0, len(word), width)] or [""]


def wrap(text: str, width: int = 20) -> list:
    """The lines of `text` filled greedily up to `width` columns.

    Blank lines separate paragraphs and are kept; runs of spaces collapse to one.
    """
    if width < 1:
        raise ValueError("width must be at least 1")
    lines = []
    for paragraph in text.split("\\n\\n"):
        current = ""
        for word in paragraph.split():
            for piece in _chunks(word, width) if len(word) > width else [word]:
                if not current:
                    current = piece
                elif len(current) + 1 + len(piece) <= width:
                    current += " " + piece
                else:
                    lines.append(current)
                    current = piece
        lines.append(current)
        lines.append("")
    return lines[:-1]


def fill(text: str, width: int = 20) -> str:
    """`wrap` joined with newlines."""
    return "\\n".join(wrap(text, width))


def shorten(text: str, width: int = 20, placeholder: str = "...") -> str:
    """`text` on one line, cut at a word boundary so that it fits in `width` with the placeholder."""
    words = text.split()
    line = " ".join(words)
    if len(line) <= width:
        return line
    kept = []
    for word in words:
        if len(" ".join([*kept, word])) + len(placeholder) + 1 > width:
            break
        kept.append(word)
    return (" ".join(kept) + " " + placeholder).strip() if kept else placeholder[:width]
'''

TEST_RENDER = """import pytest

import selfextras


def test_plain_keeps_the_text():
    assert selfextras.render("Hello") == "Hello"


def test_upper():
    assert selfextras.render("Hello", "upper") == "HELLO"


def test_unknown_format_names_the_known_ones():
    with pytest.raises(KeyError, match="known: .*plain"):
        selfextras.render("x", "nope")
"""

TEST_WORKSPACE = '''"""The tests import the checkout, never an installed copy of selfextras."""

from pathlib import Path

import selfextras


def test_the_package_is_the_checkout():
    root = Path(__file__).resolve().parents[1]
    assert Path(selfextras.__file__).resolve().is_relative_to(root / "src")
'''

TEST_WRAP = """import pytest

import selfextras


def test_wrap_fills_lines_greedily():
    assert selfextras.wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_cuts_words_longer_than_the_width():
    assert selfextras.wrap("abcdefghij xy", 4) == ["abcd", "efgh", "ij", "xy"]


def test_wrap_keeps_paragraphs():
    assert selfextras.wrap("one two\\n\\nthree", 20) == ["one two", "", "three"]


def test_wrap_refuses_a_zero_width():
    with pytest.raises(ValueError):
        selfextras.wrap("x", 0)


def test_shorten_cuts_at_a_word():
    assert selfextras.shorten("the quick brown fox", 15) == "the quick ..."
    assert selfextras.shorten("short", 15) == "short"


def test_fill_joins_lines():
    assert selfextras.fill("aa bb cc", 5) == "aa bb\\ncc"


def test_boxed_format_is_registered():
    assert "boxed" in selfextras.known_formats()


def test_boxed_output():
    assert selfextras.render("hi there", "boxed") == "+----------+\\n| hi there |\\n+----------+"
"""

CHANGELOG_HEAD = "# Changelog\n\n"
CHANGES = {
    "0.1.0": "## [0.1.0] - 2026-01-06\n\n### Added\n- `render()` with the `plain` and `upper` formats, "
    "registered as entry points.\n\n",
    "0.2.0": "## [0.2.0] - 2026-01-09\n\n### Added\n- Wrapped and boxed output: `wrap()`, `fill()`, `shorten()` "
    "and a `boxed` format (#2, fixes #1).\n\n",
}


def _init(wrapped: bool) -> str:
    names = ["known_formats", "render", *(["fill", "shorten", "wrap"] if wrapped else [])]
    return INIT.format(
        extra_import="from .wrap import fill, shorten, wrap\n" if wrapped else "",
        names=", ".join(f'"{n}"' for n in sorted(names)),
    )


def build(dest: Path) -> Path:
    """Write the selfextras repository to `dest` and return it."""
    b = builder(dest, "selfextras")
    b.commit(
        "Initial commit: render() with pluggable formats",
        {
            "README.md": "# selfextras\n\nRender text in pluggable formats.\n",
            ".gitignore": "__pycache__/\n.tox/\n",  # no *.egg-info: the install's own files must not reach a diff
            "pyproject.toml": PYPROJECT.format(entry_points=ENTRY_POINTS),
            "tox.ini": TOX,
            "src/selfextras/__init__.py": _init(wrapped=False),
            "src/selfextras/core.py": CORE,
            "src/selfextras/formats.py": FORMATS,
            "tests/test_render.py": TEST_RENDER,
            "tests/test_workspace.py": TEST_WORKSPACE,
            "CHANGELOG.md": CHANGELOG_HEAD + CHANGES["0.1.0"],
        },
    )
    b.tag("v0.1.0", "selfextras 0.1.0")
    wrapped_init = _init(wrapped=True)
    b.commit("CI: run tox on three Pythons", {".github/workflows/ci.yml": "on: [push]\njobs: {}\n"})
    b.merge_pr(
        2,
        "wrapped-output",
        "Wrapped and boxed output (fixes #1)",
        [
            ("Add wrap() and fill()", {"src/selfextras/wrap.py": WRAP, "src/selfextras/__init__.py": wrapped_init}),
            (
                "Add the boxed format, registered as an entry point",
                {
                    "src/selfextras/formats.py": FORMATS + FORMATS_BOXED,
                    "pyproject.toml": PYPROJECT.format(entry_points=ENTRY_POINTS_020),
                    "tests/test_wrap.py": TEST_WRAP,
                },
            ),
        ],
    )
    b.commit(
        "Release 0.2.0",
        {
            "CHANGELOG.md": CHANGELOG_HEAD + CHANGES["0.2.0"] + CHANGES["0.1.0"],
        },
    )
    b.tag("v0.2.0", "selfextras 0.2.0")
    return dest
