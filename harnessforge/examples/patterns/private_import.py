"""`wrapx`: a text-wrapping library whose test modules import private names, so a feature that adds one
makes every old test of the module fail at base.

Real suites do this (one module importing a private version flag: 290 of 308 FAIL_TO_PASS tests proving
nothing; a private function's new positional parameter: 97 of 103). The factory should grade each
milestone by the tests that check what it promises and set the others aside as `collateral`. History:

- v0.1.0: `wrap(text, width)` and `_split(text, width)`; `tests/test_wrap.py` imports `wrap`,
  `tests/test_split.py` checks `_split` through a module-level helper.
- v0.2.0, "Hyphenate long words" (PR #3, fixes #2): `wrap(..., hyphenate=True)` and a private `_HYPHEN`;
  `_split` gains a positional `hyphenate`. `tests/test_wrap.py` now imports `_HYPHEN` for its one new test
  (its three old tests are unchanged: at base they fail only because the module does not load), and
  `tests/test_split.py`'s helper passes the new argument (its two tests are unchanged: at base they fail on
  `_split()`'s arity). FAIL_TO_PASS: the new test; collateral: the five others.
- v0.3.0, "Wrap keeps paragraphs" (PR #5, fixes #4): `wrap` keeps blank-line paragraph breaks, untested; the
  only test change is `tests/test_wrap.py` importing the new private `_PARAGRAPH`. Every FAIL_TO_PASS test is
  collateral, so they stay graded (nothing else is) and the validation says so.
- v0.4.0, "A missing word list is an error" (PR #7, fixes #6): `load_words(path)` waited forever for a missing
  file to appear; now it raises `FileNotFoundError`. Its new test hangs at base: with a per-test timeout
  (`environments.test_case_timeout_s`) that test fails alone; without one the whole run times out.
- v0.5.0, "Faster wrapping of long texts" (PR #9, fixes #8): each line is joined once; its new test checks what
  already held (every word kept, in order), so it passes at base: nothing can grade the milestone.
- v0.6.0, "Indent the first line" (PR #11, fixes #10): `wrap(..., indent="  ")`, with a test that fails at base.
  Planned v0.4.0..v0.6.0 with a milestone per release, validation merges the untested v0.5.0 milestone into it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ..builder import RepoBuilder
from .common import package_pyproject

START = datetime(2026, 2, 2, 9, 0, tzinfo=timezone.utc)
REMOTE = "https://github.com/harnessforge-examples/wrapx.git"

PYPROJECT = package_pyproject("wrapx", "Wrap text to a width")

CHANGES = {
    "0.1.0": "## 0.1.0\n\n- `wrap(text, width)` wraps text to a width.\n\n",
    "0.2.0": "## 0.2.0\n\n- `wrap(text, width, hyphenate=True)` splits words longer than the width with a "
    "hyphen (#3, fixes #2).\n\n",
    "0.3.0": "## 0.3.0\n\n- `wrap` keeps paragraphs: a blank line in the text stays a blank line (#5, fixes #4).\n\n",
    "0.4.0": "## 0.4.0\n\n- `load_words(path)` raises `FileNotFoundError` for a missing file instead of waiting for it "
    "(#7, fixes #6).\n\n",
    "0.5.0": "## 0.5.0\n\n- `wrap` is faster on long texts: each line is joined once (#9, fixes #8).\n\n",
    "0.6.0": '## 0.6.0\n\n- `wrap(text, width, indent="  ")` indents the first line (#11, fixes #10).\n\n',
}

WORDS_010 = '''"""Word lists: one word per line, for hyphenation exceptions."""

from __future__ import annotations

import os
import time


def load_words(path: str) -> list[str]:
    """The words of the file at `path`; waits for the file to appear (it may still be downloading)."""
    while not os.path.exists(path):
        time.sleep(0.05)
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]
'''

WORDS_040 = WORDS_010.replace(
    '''    """The words of the file at `path`; waits for the file to appear (it may still be downloading)."""
    while not os.path.exists(path):
        time.sleep(0.05)
''',
    '''    """The words of the file at `path` (FileNotFoundError when there is none)."""
''',
).replace("import os\nimport time\n\n", "")

TEST_WORDS = """from wrapx.words import load_words


def test_words_one_per_line(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("alpha\\n\\nbeta\\n")
    assert load_words(str(path)) == ["alpha", "beta"]
"""

TEST_WORDS_040 = TEST_WORDS.replace("from wrapx.words", "import pytest\n\nfrom wrapx.words") + (
    """

def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_words(str(tmp_path / "missing.txt"))
"""
)


def _loop(split_call: str) -> str:
    """`wrap`'s line loop over the words `split_call` gives, as v0.1.0 to v0.4.0 have it (v0.5.0 rewrites it)."""
    return (
        """    lines: list[str] = []
    line = ""
    for word in """
        + split_call
        + """:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines
"""
    )


def _core(head: str, split_signature: str, split_body: str, wrap_signature: str, split_call: str) -> str:
    """`wrapx/core.py` at a release: its head (docstring and constants), `_split`, and `wrap`'s line loop."""
    return f"{head}\n\n{split_signature}\n{split_body}\n\n\n{wrap_signature}\n" + _loop(split_call)


HEAD = '"""Wrapping text to a width."""\n\nfrom __future__ import annotations\n'
CORE_010 = _core(
    HEAD,
    "def _split(text: str, width: int) -> list[str]:",
    '    """Words of `text`, none longer than `width` is cut."""\n    return text.split()',
    'def wrap(text: str, width: int = 70) -> list[str]:\n    """The lines of `text` wrapped to `width` columns."""',
    "_split(text, width)",
)
CORE_020 = _core(
    HEAD + '\n_HYPHEN = "-"\n',
    "def _split(text: str, width: int, hyphenate: bool) -> list[str]:",
    '''    """Words of `text`; with `hyphenate`, words longer than `width` are cut into hyphenated pieces."""
    words = []
    for word in text.split():
        while hyphenate and len(word) > width:
            words.append(word[: width - 1] + _HYPHEN)
            word = word[width - 1 :]
        words.append(word)
    return words''',
    '''def wrap(text: str, width: int = 70, hyphenate: bool = False) -> list[str]:
    """The lines of `text` wrapped to `width` columns; `hyphenate` splits words longer than the width."""''',
    "_split(text, width, hyphenate)",
)

CORE_030 = CORE_020.replace(
    '_HYPHEN = "-"\n',
    '_HYPHEN = "-"\n_PARAGRAPH = "\\n\\n"\n',
).replace(
    '''def wrap(text: str, width: int = 70, hyphenate: bool = False) -> list[str]:
    """The lines of `text` wrapped to `width` columns; `hyphenate` splits words longer than the width."""
    lines: list[str] = []
''',
    '''def wrap(text: str, width: int = 70, hyphenate: bool = False) -> list[str]:
    """The lines of `text` wrapped to `width` columns; `hyphenate` splits words longer than the width;
    a blank line between paragraphs stays."""
    if _PARAGRAPH in text:
        out: list[str] = []
        for number, paragraph in enumerate(text.split(_PARAGRAPH)):
            out += ([""] if number else []) + wrap(paragraph, width, hyphenate)
        return out
    lines: list[str] = []
''',
)

TEST_WRAP = """from wrapx.core import wrap


def test_short_text_is_one_line():
    assert wrap("a b c", 10) == ["a b c"]


def test_lines_break_at_the_width():
    assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]


def test_empty_text_has_no_line():
    assert wrap("", 10) == []
"""

TEST_WRAP_020 = TEST_WRAP.replace("from wrapx.core import wrap", "from wrapx.core import _HYPHEN, wrap") + (
    """

def test_hyphenate_cuts_long_words():
    assert wrap("abcdefghij", 5, hyphenate=True) == [f"abcd{_HYPHEN}", f"efgh{_HYPHEN}", "ij"]
"""
)

TEST_SPLIT = """from wrapx.core import _split


def words(text):
    return _split(text, 4)


def test_words_split_on_whitespace():
    assert words("a  b\\tc") == ["a", "b", "c"]


def test_long_words_stay_whole_by_default():
    assert words("abcdefgh") == ["abcdefgh"]
"""

TEST_SPLIT_020 = TEST_SPLIT.replace("return _split(text, 4)", "return _split(text, 4, False)")

# v0.3.0 forgets a test of its own feature; its only test change is the module's import of the new private name.
TEST_WRAP_030 = TEST_WRAP_020.replace("import _HYPHEN, wrap", "import _HYPHEN, _PARAGRAPH, wrap")


LOOP_030 = _loop("_split(text, width, hyphenate)")
LOOP_050 = """    lines: list[str] = []
    words: list[str] = []
    size = 0
    for word in _split(text, width, hyphenate):
        if words and size + 1 + len(word) > width:
            lines.append(" ".join(words))
            words, size = [word], len(word)
        else:
            size += len(word) + (1 if words else 0)
            words.append(word)
    if words:
        lines.append(" ".join(words))
    return lines
"""
CORE_050 = CORE_030.replace(LOOP_030, LOOP_050)
CORE_060 = CORE_050.replace(
    "def wrap(text: str, width: int = 70, hyphenate: bool = False) -> list[str]:",
    'def wrap(text: str, width: int = 70, hyphenate: bool = False, indent: str = "") -> list[str]:',
).replace(
    '    if words:\n        lines.append(" ".join(words))\n    return lines\n',
    '    if words:\n        lines.append(" ".join(words))\n'
    "    if indent and lines:\n        lines[0] = indent + lines[0]\n    return lines\n",
)
TEST_WRAP_050 = TEST_WRAP_030 + (
    """

def test_many_words_keep_their_order():
    text = " ".join(f"w{number}" for number in range(50))
    assert " ".join(wrap(text, 12)).split() == text.split()
"""
)
TEST_WRAP_060 = TEST_WRAP_050 + (
    """

def test_the_first_line_is_indented():
    assert wrap("aaa bbb ccc", 7, indent="  ") == ["  aaa bbb", "ccc"]
"""
)


def build(dest: Path) -> Path:
    """Write the wrapx repository to `dest` (which must not exist or be empty) and return it."""
    b = RepoBuilder(dest, START)
    b.git("remote", "add", "origin", REMOTE)
    log = ["# Changelog\n\n"]

    def release(version: str) -> None:
        log.insert(1, CHANGES[version])
        b.commit(
            f"Release {version}", {"CHANGELOG.md": "".join(log), "pyproject.toml": PYPROJECT.format(version=version)}
        )
        b.tag(f"v{version}", f"wrapx {version}")

    b.commit("Initial commit", {"README.md": "# wrapx\n", ".gitignore": "__pycache__/\n*.egg-info/\n"})
    b.commit(
        "Wrap text to a width",
        {
            "pyproject.toml": PYPROJECT.format(version="0.1.0"),
            "wrapx/__init__.py": '"""wrapx: wrap text to a width."""\n\nfrom .core import wrap\n\n__all__ = ["wrap"]\n',
            "wrapx/core.py": CORE_010,
            "wrapx/words.py": WORDS_010,
            "tests/test_words.py": TEST_WORDS,
            "tests/__init__.py": "",
            "tests/test_wrap.py": TEST_WRAP,
            "tests/test_split.py": TEST_SPLIT,
        },
    )
    release("0.1.0")

    b.squash_pr(
        3,
        "Hyphenate long words",
        {
            "wrapx/core.py": CORE_020,
            "tests/test_wrap.py": TEST_WRAP_020,
            "tests/test_split.py": TEST_SPLIT_020,
        },
        body="`wrap(..., hyphenate=True)` cuts words longer than the width into hyphenated pieces.\n\nFixes #2",
    )
    release("0.2.0")

    b.squash_pr(
        5,
        "Wrap keeps paragraphs",
        {
            "wrapx/core.py": CORE_030,
            "tests/test_wrap.py": TEST_WRAP_030,
        },
        body="A blank line between paragraphs stays a blank line.\n\nFixes #4",
    )
    release("0.3.0")

    b.squash_pr(
        7,
        "A missing word list is an error",
        {"wrapx/words.py": WORDS_040, "tests/test_words.py": TEST_WORDS_040},
        body="`load_words` raised nothing and waited forever for a missing file.\n\nFixes #6",
    )
    release("0.4.0")

    b.squash_pr(
        9,
        "Faster wrapping of long texts",
        {"wrapx/core.py": CORE_050, "tests/test_wrap.py": TEST_WRAP_050},
        body="Each line is joined once instead of growing a string word by word.\n\nFixes #8",
    )
    release("0.5.0")

    b.squash_pr(
        11,
        "Indent the first line",
        {"wrapx/core.py": CORE_060, "tests/test_wrap.py": TEST_WRAP_060},
        body='`wrap(..., indent="  ")` puts the indent before the first line.\n\nFixes #10',
    )
    release("0.6.0")
    return b.path
