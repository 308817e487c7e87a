"""`kvstash`: a key-value library whose tests are `unittest.TestCase` classes not named `Test*`,
with their test methods in mixins.

Real suites (more-itertools' `ChunkedTests`, `PeekableMixinTests`; Django's and Twisted's contract
mixins) look like this, and a static parse that only sees `test*` functions and `Test*` classes
finds no acceptance test in them. Its history:

- v0.1.0: an in-memory and a file store sharing a contract. `tests/contracts.py` holds
  `class StoreContract:` (a plain mixin, not collected by itself); `tests/test_memory.py` has
  `MemoryStoreChecks(StoreContract, unittest.TestCase)`, `tests/test_files.py` has
  `FileStoreChecks(StoreContract, unittest.TestCase)`; `tests/test_parser.py` has `ParserChecks`.
- v0.2.0, "Keys can expire" (PR #4, fixes #3): three source files and a new one change, and the
  only test file the milestone changes is the mixin's module: its new tests run as
  `tests/test_memory.py::MemoryStoreChecks::test_expiry` and
  `tests/test_files.py::FileStoreChecks::test_expiry`, ids in files the milestone does not touch.
  A later test-only commit tidies `StoreContract.test_overwrite` (no description covers it), so
  that test is excluded from the acceptance tests with its reason.
- v0.3.0, "Quoted values and sections in specs" (PR #7, fixes #6): the parser's new tests are a
  mixin (`QuotingRules`) inherited by two classes in the same file (`ParserChecks`,
  `StrictParserChecks`), and a pytest-parametrised function whose ids hold spaces and brackets
  (`test_sections_prefix_keys[one [section]]`).

Every feature's tests fail before it and pass after it; every release's suite passes.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ..builder import RepoBuilder
from .common import package_pyproject

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
REMOTE = "https://github.com/harnessforge-examples/kvstash.git"

PYPROJECT = package_pyproject("kvstash", "Small key-value stores with one contract")

CHANGELOG_HEAD = "# Changelog\n\n"
CHANGES = {
    "0.1.0": "## [0.1.0] - 2026-01-06\n\n### Added\n- An in-memory store and a file store with one contract.\n\n",
    "0.2.0": "## [0.2.0] - 2026-01-12\n\n### Added\n"
    "- Keys can expire: `set(key, value, ttl=seconds)` on every store, with an injectable clock (#4, fixes #3).\n\n",
    "0.3.0": "## [0.3.0] - 2026-01-19\n\n### Added\n"
    "- Specs accept quoted values and `[section]` prefixes, with positions in parse errors (#7, fixes #6).\n\n",
}


def _init(version: str, names: list[str], imports: str) -> str:
    return f'"""kvstash: small key-value stores."""\n\n{imports}\n__version__ = "{version}"\n__all__ = {names!r}\n'


NAMES_010 = ["FileStore", "KeyMissing", "MemoryStore", "Store", "parse_pairs"]
IMPORTS_010 = (
    "from .base import KeyMissing, Store\nfrom .files import FileStore\nfrom .memory import MemoryStore\n"
    "from .parser import parse_pairs\n"
)

BASE = '''"""What every store does: get, set, delete and list keys."""

from __future__ import annotations

from abc import ABC, abstractmethod


class KeyMissing(KeyError):
    """The key is not in the store."""


class Store(ABC):
    @abstractmethod
    def _load(self, key: str):
        """The stored value, or raise KeyMissing."""

    @abstractmethod
    def _save(self, key: str, value) -> None: ...

    @abstractmethod
    def _drop(self, key: str) -> None: ...

    @abstractmethod
    def _all_keys(self) -> list[str]: ...

    def get(self, key: str):
        return self._load(key)

    def set(self, key: str, value) -> None:
        if not key:
            raise ValueError("a key cannot be empty")
        self._save(key, value)

    def delete(self, key: str) -> None:
        self._load(key)
        self._drop(key)

    def keys(self) -> list[str]:
        return sorted(self._all_keys())

    def __contains__(self, key: str) -> bool:
        try:
            self._load(key)
        except KeyMissing:
            return False
        return True
'''

MEMORY = '''"""A store in a dictionary."""

from __future__ import annotations

from .base import KeyMissing, Store


class MemoryStore(Store):
    def __init__(self) -> None:
        self._items: dict = {}

    def _load(self, key):
        try:
            return self._items[key]
        except KeyError:
            raise KeyMissing(key) from None

    def _save(self, key, value):
        self._items[key] = value

    def _drop(self, key):
        del self._items[key]

    def _all_keys(self):
        return list(self._items)
'''

FILES = '''"""A store keeping one JSON file per key in a directory."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, unquote

from .base import KeyMissing, Store


class FileStore(Store):
    def __init__(self, directory) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / (quote(key, safe="") + ".json")

    def _load(self, key):
        try:
            return json.loads(self._path(key).read_text())
        except FileNotFoundError:
            raise KeyMissing(key) from None

    def _save(self, key, value):
        self._path(key).write_text(json.dumps(value))

    def _drop(self, key):
        self._path(key).unlink()

    def _all_keys(self):
        return [unquote(p.name[: -len(".json")]) for p in self.directory.glob("*.json")]
'''

PARSER = '''"""Specs: `key=value; other=value` strings, as found in config files and command lines."""

from __future__ import annotations


def parse_pairs(spec: str) -> dict[str, str]:
    pairs = {}
    for part in spec.split(";"):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"expected key=value, got {part.strip()!r}")
        key, value = part.split("=", 1)
        pairs[key.strip()] = value.strip()
    return pairs
'''

CONTRACTS = '''"""The behaviour every store shares; each store's test case mixes this in."""

import kvstash
from kvstash import KeyMissing


class StoreContract:
    def make_store(self, **options):
        raise NotImplementedError

    def test_set_then_get(self):
        store = self.make_store()
        store.set("colour", "teal")
        self.assertEqual(store.get("colour"), "teal")

    def test_overwrite(self):
        store = self.make_store()
        store.set("n", 1)
        store.set("n", 2)
        self.assertEqual(store.get("n"), 2)

    def test_delete(self):
        store = self.make_store()
        store.set("gone", True)
        store.delete("gone")
        self.assertNotIn("gone", store)

    def test_missing_key_raises(self):
        with self.assertRaises(KeyMissing):
            self.make_store().get("nope")

    def test_keys_are_sorted(self):
        store = self.make_store()
        for key in ("b", "a", "c/d"):
            store.set(key, key)
        self.assertEqual(store.keys(), ["a", "b", "c/d"])
'''

TEST_MEMORY = """import unittest

from kvstash import MemoryStore
from tests.contracts import StoreContract


class MemoryStoreChecks(StoreContract, unittest.TestCase):
    def make_store(self, **options):
        return MemoryStore(**options)

    def test_stores_are_independent(self):
        one, two = self.make_store(), self.make_store()
        one.set("k", 1)
        self.assertNotIn("k", two)
"""

TEST_FILES = """import tempfile
import unittest

from kvstash import FileStore
from tests.contracts import StoreContract


class FileStoreChecks(StoreContract, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def make_store(self, **options):
        return FileStore(self.tmp.name, **options)

    def test_values_survive_reopen(self):
        self.make_store().set("k", [1, 2])
        self.assertEqual(self.make_store().get("k"), [1, 2])
"""

TEST_PARSER = """import unittest

from kvstash import parse_pairs


class ParserChecks(unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(parse_pairs("a=1; b = two"), {"a": "1", "b": "two"})

    def test_blank_spec(self):
        self.assertEqual(parse_pairs("  ;  "), {})

    def test_missing_equals_raises(self):
        with self.assertRaises(ValueError):
            parse_pairs("a=1; b")
"""

# ---- v0.2.0: keys can expire (#3, PR #4) ------------------------------------------------------
CLOCK = '''"""Clocks: stores ask one for the time, so tests can move it."""

from __future__ import annotations

import time


class SystemClock:
    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        self._now += seconds
'''

BASE_TTL = (
    (
        "from abc import ABC, abstractmethod\n",
        "from abc import ABC, abstractmethod\n\nfrom .clock import SystemClock\n",
    ),
    (
        "class Store(ABC):\n",
        "class Store(ABC):\n    clock = SystemClock()\n\n",
    ),
    (
        """    def get(self, key: str):
        return self._load(key)

    def set(self, key: str, value) -> None:
        if not key:
            raise ValueError("a key cannot be empty")
        self._save(key, value)
""",
        """    def _live(self, key: str):
        \"\"\"The value of a key that has not expired; an expired key is dropped on the way.\"\"\"
        value, deadline = self._load(key)
        if deadline is not None and self.clock.now() >= deadline:
            self._drop(key)
            raise KeyMissing(key)
        return value

    def get(self, key: str):
        return self._live(key)

    def set(self, key: str, value, ttl: float | None = None) -> None:
        if not key:
            raise ValueError("a key cannot be empty")
        if ttl is not None and ttl <= 0:
            raise ValueError(f"ttl must be positive, got {ttl}")
        self._save(key, (value, None if ttl is None else self.clock.now() + ttl))
""",
    ),
    (
        """    def delete(self, key: str) -> None:
        self._load(key)
        self._drop(key)

    def keys(self) -> list[str]:
        return sorted(self._all_keys())

    def __contains__(self, key: str) -> bool:
        try:
            self._load(key)
""",
        """    def delete(self, key: str) -> None:
        self._live(key)
        self._drop(key)

    def keys(self) -> list[str]:
        return sorted(k for k in self._all_keys() if k in self)

    def __contains__(self, key: str) -> bool:
        try:
            self._live(key)
""",
    ),
)

MEMORY_TTL = (
    (
        "from .base import KeyMissing, Store\n",
        "from .base import KeyMissing, Store\nfrom .clock import SystemClock\n",
    ),
    (
        "    def __init__(self) -> None:\n        self._items: dict = {}\n",
        "    def __init__(self, clock=None) -> None:\n        self._items: dict = {}\n"
        "        self.clock = clock or SystemClock()\n",
    ),
)

FILES_TTL = (
    (
        "from .base import KeyMissing, Store\n",
        "from .base import KeyMissing, Store\nfrom .clock import SystemClock\n",
    ),
    (
        "    def __init__(self, directory) -> None:\n        self.directory = Path(directory)\n",
        "    def __init__(self, directory, clock=None) -> None:\n        self.directory = Path(directory)\n"
        "        self.clock = clock or SystemClock()\n",
    ),
    (
        """        try:
            return json.loads(self._path(key).read_text())
        except FileNotFoundError:
            raise KeyMissing(key) from None

    def _save(self, key, value):
        self._path(key).write_text(json.dumps(value))
""",
        """        try:
            record = json.loads(self._path(key).read_text())
        except FileNotFoundError:
            raise KeyMissing(key) from None
        return record["value"], record["expires"]

    def _save(self, key, value):
        stored, expires = value
        self._path(key).write_text(json.dumps({"value": stored, "expires": expires}))
""",
    ),
)

CONTRACTS_TTL = (
    (
        """        self.assertEqual(store.keys(), ["a", "b", "c/d"])
""",
        """        self.assertEqual(store.keys(), ["a", "b", "c/d"])

    def test_expiry(self):
        clock = kvstash.ManualClock()
        store = self.make_store(clock=clock)
        store.set("session", "abc", ttl=10)
        clock.advance(9.5)
        self.assertEqual(store.get("session"), "abc")
        clock.advance(0.5)
        with self.assertRaises(KeyMissing):
            store.get("session")

    def test_keys_skip_expired(self):
        clock = kvstash.ManualClock()
        store = self.make_store(clock=clock)
        store.set("short", 1, ttl=1)
        store.set("long", 2, ttl=100)
        store.set("forever", 3)
        clock.advance(5)
        self.assertEqual(store.keys(), ["forever", "long"])

    def test_ttl_must_be_positive(self):
        store = self.make_store(clock=kvstash.ManualClock())
        with self.assertRaises(ValueError):
            store.set("k", 1, ttl=0)
""",
    ),
)

CONTRACTS_TIDY = (
    """        store.set("n", 1)
        store.set("n", 2)
        self.assertEqual(store.get("n"), 2)
""",
    """        for value in (1, 2, 3):
            store.set("n", value)
        self.assertEqual(store.get("n"), 3)
""",
)

NAMES_020 = ["FileStore", "KeyMissing", "ManualClock", "MemoryStore", "Store", "SystemClock", "parse_pairs"]
IMPORTS_020 = IMPORTS_010.replace("from .files", "from .clock import ManualClock, SystemClock\nfrom .files")

# ---- v0.3.0: quoted values and sections (#6, PR #7) -------------------------------------------
ERRORS = '''"""Errors with a position, so a bad spec points at its own mistake."""

from __future__ import annotations


class ParseError(ValueError):
    def __init__(self, message: str, spec: str, position: int) -> None:
        super().__init__(f"{message} at column {position + 1}: {spec!r}")
        self.spec = spec
        self.position = position
'''

PARSER_V3 = '''"""Specs: `key=value; other="quoted; value"` strings, optionally grouped by `[section]` prefixes."""

from __future__ import annotations

from .errors import ParseError


def _split(spec: str) -> list[tuple[int, str]]:
    """The `;`-separated parts of a spec with their start columns; `;` inside double quotes is kept."""
    parts, start, quoted, escaped = [], 0, False, False
    for i, char in enumerate(spec):
        if escaped:
            escaped = False
        elif char == "\\\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            parts.append((start, spec[start:i]))
            start = i + 1
    if quoted:
        raise ParseError("unterminated quote", spec, spec.rindex('"'))
    parts.append((start, spec[start:]))
    return parts


def _value(raw: str, spec: str, column: int, strict: bool) -> str:
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\\\"', '"')
    if strict and any(c in text for c in " \\t"):
        raise ParseError("unquoted value with spaces", spec, column)
    return text


def parse_pairs(spec: str, strict: bool = False) -> dict[str, str]:
    """`a=1; [db] host=x` -> {"a": "1", "db.host": "x"}; a section applies to the pairs after it."""
    pairs: dict[str, str] = {}
    section = ""
    for column, part in _split(spec):
        text = part.strip()
        if not text:
            continue
        if text.startswith("["):
            end = text.find("]")
            if end < 0:
                raise ParseError("unclosed section", spec, column)
            section, text = text[1:end].strip(), text[end + 1 :].strip()
            if not text:
                continue
        if "=" not in text:
            raise ParseError(f"expected key=value, got {text!r}", spec, column)
        key, raw = text.split("=", 1)
        name = f"{section}.{key.strip()}" if section else key.strip()
        pairs[name] = _value(raw, spec, column + part.index("=") + 1, strict)
    return pairs
'''

LOADER = '''"""Filling a store from a spec."""

from __future__ import annotations

from .parser import parse_pairs


def load_spec(store, spec: str, strict: bool = False) -> list[str]:
    """Set every pair of `spec` in `store`; returns the keys set, in spec order."""
    pairs = parse_pairs(spec, strict=strict)
    for key, value in pairs.items():
        store.set(key, value)
    return list(pairs)
'''

TEST_PARSER_V3 = """import unittest

import pytest

import kvstash
from kvstash import parse_pairs


class QuotingRules:
    strict = False

    def parse(self, spec):
        return parse_pairs(spec, strict=self.strict)

    def test_quoted_value_keeps_semicolons(self):
        self.assertEqual(self.parse('motd="hi; there"; n=1'), {"motd": "hi; there", "n": "1"})

    def test_escaped_quote(self):
        self.assertEqual(self.parse('say="a \\\\"b\\\\" c"'), {"say": 'a "b" c'})

    def test_unterminated_quote_points_at_it(self):
        with self.assertRaises(kvstash.ParseError) as caught:
            self.parse('a=1; b="open')
        self.assertEqual(caught.exception.position, 7)


class ParserChecks(QuotingRules, unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(parse_pairs("a=1; b = two"), {"a": "1", "b": "two"})

    def test_blank_spec(self):
        self.assertEqual(parse_pairs("  ;  "), {})

    def test_missing_equals_raises(self):
        with self.assertRaises(ValueError):
            parse_pairs("a=1; b")


class StrictParserChecks(QuotingRules, unittest.TestCase):
    strict = True

    def test_unquoted_spaces_are_refused(self):
        with self.assertRaises(kvstash.ParseError):
            self.parse("motd=hi there")


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("[db] host=x; port=5", {"db.host": "x", "db.port": "5"}),
        ("a=1; [web] a=2", {"a": "1", "web.a": "2"}),
    ],
    ids=["one [section]", "two sections"],
)
def test_sections_prefix_keys(spec, expected):
    assert parse_pairs(spec) == expected
"""

TEST_LOADER = """import unittest

from kvstash import MemoryStore, load_spec


class LoaderBehaviour(unittest.TestCase):
    def test_loads_pairs_in_order(self):
        store = MemoryStore()
        self.assertEqual(load_spec(store, "[app] b=2; a=1"), ["app.b", "app.a"])
        self.assertEqual(store.get("app.a"), "1")
"""

NAMES_030 = [*NAMES_020, "ParseError", "load_spec"]
IMPORTS_030 = IMPORTS_020 + "from .errors import ParseError\nfrom .loader import load_spec\n"


def build(dest: Path) -> Path:
    """Write the kvstash repository to `dest` (which must not exist or be empty) and return it."""
    b = RepoBuilder(dest, START)
    b.git("remote", "add", "origin", REMOTE)
    log = [CHANGELOG_HEAD]

    def release(version: str, names: list[str], imports: str) -> None:
        log.insert(1, CHANGES[version])
        files = {"CHANGELOG.md": "".join(log), "pyproject.toml": PYPROJECT.format(version=version)}
        b.commit(f"Release {version}", {**files, "kvstash/__init__.py": _init(version, names, imports)})
        b.tag(f"v{version}", f"kvstash {version}")

    def edits(path: str, pairs) -> dict:
        text = (b.path / path).read_text()
        for old, new in pairs:
            if text.count(old) != 1:
                raise ValueError(f"{path}: snippet occurs {text.count(old)} times: {old[:60]!r}")
            text = text.replace(old, new)
        return {path: text}

    b.commit("Initial commit", {"README.md": "# kvstash\n", ".gitignore": "__pycache__/\n*.egg-info/\n"})
    b.commit(
        "Add memory and file stores with a shared contract",
        {
            "pyproject.toml": PYPROJECT.format(version="0.1.0"),
            "kvstash/__init__.py": _init("0.1.0", NAMES_010, IMPORTS_010),
            "kvstash/base.py": BASE,
            "kvstash/memory.py": MEMORY,
            "kvstash/files.py": FILES,
            "kvstash/parser.py": PARSER,
            "tests/__init__.py": "",
            "tests/contracts.py": CONTRACTS,
            "tests/test_memory.py": TEST_MEMORY,
            "tests/test_files.py": TEST_FILES,
            "tests/test_parser.py": TEST_PARSER,
        },
    )
    release("0.1.0", NAMES_010, IMPORTS_010)

    b.merge_pr(
        4,
        "key-expiry",
        "Keys can expire",
        [
            (
                "Add clocks\n\nStores ask a clock for the time, so tests can move it.\n\nPart of #3",
                {"kvstash/clock.py": CLOCK},
            ),
            (
                "Let keys expire after a ttl\n\nEvery store takes `ttl=` in set(); expired keys are gone from "
                "get(), keys() and `in`.\n\nFixes #3",
                lambda _: {
                    **edits("kvstash/base.py", BASE_TTL),
                    **edits("kvstash/memory.py", MEMORY_TTL),
                    **edits("kvstash/files.py", FILES_TTL),
                    "kvstash/__init__.py": _init("0.1.0", NAMES_020, IMPORTS_020),
                    **edits("tests/contracts.py", CONTRACTS_TTL),
                },
            ),
        ],
    )
    b.commit("Tidy the overwrite contract test", lambda _: edits("tests/contracts.py", [CONTRACTS_TIDY]))
    release("0.2.0", NAMES_020, IMPORTS_020)

    b.merge_pr(
        7,
        "quoted-specs",
        "Quoted values and sections in specs",
        [
            (
                "Parse errors carry their position\n\nPart of #6",
                {"kvstash/errors.py": ERRORS},
            ),
            (
                "Quoted values and [section] prefixes in specs\n\nA `;` inside double quotes is part of the value; "
                "`[db] host=x` sets `db.host`. Strict parsing refuses unquoted spaces.\n\nFixes #6",
                {
                    "kvstash/parser.py": PARSER_V3,
                    "kvstash/loader.py": LOADER,
                    "kvstash/__init__.py": _init("0.2.0", NAMES_030, IMPORTS_030),
                    "tests/test_parser.py": TEST_PARSER_V3,
                    "tests/test_loader.py": TEST_LOADER,
                },
            ),
        ],
    )
    release("0.3.0", NAMES_030, IMPORTS_030)
    return b.path
