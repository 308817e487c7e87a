"""The history of `tasklite`, a small task-list library, written as a script.

It is shaped like a real project's: releases v0.1.0..v0.5.0 (plus a v0.3.0rc1 pre-release),
a Keep-a-Changelog CHANGELOG.md citing PRs and issues, merge commits (`Merge pull request #N`)
and squash commits (`Title (#N)`), features spanning several PRs that each touch >=3 files with
tests, two features whose PRs interleave, and noise: docs, CI, version bumps, a test-only tidy-up.
Every release's tests pass on a clean checkout, and every feature's tests fail before it, with
two deliberate exceptions that real histories have too:

- Flaky: `tests/test_cli.py::test_first_run_creates_history` (CLI, PR #22, issue #21). The
  command logs its changes to `.tasklite/history` under the current directory unless told
  otherwise, and this test, unlike the others, does not pass `--state-dir`: it writes into the
  working tree of the checkout (a directory the same PR adds to .gitignore) and asserts that
  the history holds exactly its one change. It passes on the first run in a fresh checkout and
  fails on every later run in the same working tree, because the ignored file survives
  `git checkout -f` and `git clean -fd` (only `git clean -fdx` removes it).
- Does not reproduce: the tag index (issue #24, PRs #25 and #26, release v0.5.0) is a
  refactor across three source files plus a new one; its new tests (tests/test_tag_index.py)
  only exercise behaviour that already worked, so they pass before the change as well.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from .builder import RepoBuilder

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)

# ------------------------------------------------------------------------------------------------
# v0.1.0
# ------------------------------------------------------------------------------------------------
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tasklite"
version = "0.1.0"
description = "A tiny task list library"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest>=7"]

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
"""

LICENSE = """MIT License

Copyright (c) 2024 Bo

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

README = """# tasklite

A tiny task list library: tasks, an in-memory store, nothing else to install.

```python
from tasklite import TaskStore

store = TaskStore()
store.add("write the docs")
```
"""

CI = """name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pip install -e ".[test]"
      - run: pytest
"""

INIT = '''"""tasklite: a tiny task list library."""

from .models import Task
from .store import TaskStore

__version__ = "0.1.0"
__all__ = ["Task", "TaskStore"]
'''

MODELS = '''"""Task records."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Task:
    id: int
    title: str
    done: bool = False

    def __post_init__(self) -> None:
        self.title = self.title.strip()
        if not self.title:
            raise ValueError("a task needs a title")

    def complete(self) -> None:
        self.done = True

    def reopen(self) -> None:
        self.done = False
'''

STORE = '''"""An in-memory collection of tasks."""

from __future__ import annotations

from .models import Task


class TaskStore:
    def __init__(self) -> None:
        self._tasks: dict[int, Task] = {}
        self._next_id = 1

    def add(self, title: str) -> Task:
        task = Task(id=self._next_id, title=title)
        self._tasks[task.id] = task
        self._next_id += 1
        return task

    def get(self, task_id: int) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise KeyError(f"no task with id {task_id}") from None

    def complete(self, task_id: int) -> Task:
        task = self.get(task_id)
        task.complete()
        return task

    def remove(self, task_id: int) -> None:
        self.get(task_id)
        del self._tasks[task_id]

    def list(self, include_done: bool = True) -> list[Task]:
        return [t for t in self._tasks.values() if include_done or not t.done]

    def __len__(self) -> int:
        return len(self._tasks)
'''

TEST_STORE = """import pytest

from tasklite import Task, TaskStore


def test_add_assigns_increasing_ids():
    store = TaskStore()
    a = store.add("write docs")
    b = store.add("ship it")
    assert (a.id, b.id) == (1, 2)


def test_titles_are_stripped():
    assert TaskStore().add("  tidy up  ").title == "tidy up"


@pytest.mark.parametrize("title", ["", "   ", "\\t\\n"])
def test_blank_titles_are_rejected(title):
    with pytest.raises(ValueError):
        TaskStore().add(title)


def test_get_unknown_task_raises_key_error():
    with pytest.raises(KeyError, match="no task with id 7"):
        TaskStore().get(7)


def test_complete_marks_task_done():
    store = TaskStore()
    task = store.add("water plants")
    store.complete(task.id)
    assert store.get(task.id).done


def test_reopen_clears_done():
    task = Task(id=1, title="x", done=True)
    task.reopen()
    assert not task.done


def test_list_can_hide_done_tasks():
    store = TaskStore()
    store.add("a")
    done = store.add("b")
    store.complete(done.id)
    assert [t.title for t in store.list(include_done=False)] == ["a"]
    assert len(store.list()) == 2


def test_remove_deletes_task():
    store = TaskStore()
    task = store.add("a")
    store.remove(task.id)
    assert len(store) == 0
    with pytest.raises(KeyError):
        store.remove(task.id)
"""

CHANGELOG_HEAD = "# Changelog\n\nAll notable changes to this project are documented here.\n\n"

CHANGES_010 = """## [0.1.0] - 2026-03-03

### Added
- First release: tasks with titles, completion, and an in-memory store.
"""

# ------------------------------------------------------------------------------------------------
# Feature: tags and filtering (issue #3) -- PRs #4 and #6
# ------------------------------------------------------------------------------------------------
MODELS_TAGS_IMPORT = ("from dataclasses import dataclass\n", "from dataclasses import dataclass, field\n")
MODELS_TAGS_FIELD = (
    "    done: bool = False\n",
    "    done: bool = False\n    tags: set[str] = field(default_factory=set)\n",
)
MODELS_TAGS_POST = (
    '            raise ValueError("a task needs a title")\n',
    '            raise ValueError("a task needs a title")\n        self.tags = {normalize_tag(t) for t in self.tags}\n',
)
MODELS_TAGS_METHODS = (
    "    def reopen(self) -> None:\n        self.done = False\n",
    '''    def reopen(self) -> None:
        self.done = False

    def add_tag(self, tag: str) -> None:
        self.tags.add(normalize_tag(tag))

    def remove_tag(self, tag: str) -> None:
        self.tags.discard(normalize_tag(tag))

    def has_tag(self, tag: str) -> bool:
        return normalize_tag(tag) in self.tags


def normalize_tag(tag: str) -> str:
    """Tags compare case-insensitively and may not contain spaces."""
    cleaned = tag.strip().lower()
    if not cleaned or any(ch.isspace() for ch in cleaned):
        raise ValueError(f"invalid tag {tag!r}: tags are single words")
    return cleaned
''',
)

STORE_TAGS_ADD = (
    """    def add(self, title: str) -> Task:
        task = Task(id=self._next_id, title=title)
""",
    """    def add(self, title: str, tags: Iterable[str] = ()) -> Task:
        task = Task(id=self._next_id, title=title, tags=set(tags))
""",
)
STORE_TAGS_IMPORT = ("from .models import Task\n", "from typing import Iterable\n\nfrom .models import Task\n")
STORE_TAGS_LIST = (
    "    def __len__(self) -> int:\n",
    '''    def tags(self) -> list[str]:
        """Every tag in use, sorted."""
        return sorted({tag for task in self._tasks.values() for tag in task.tags})

    def __len__(self) -> int:
''',
)

TEST_TAGS = """import pytest

from tasklite import Task, TaskStore, normalize_tag


@pytest.mark.parametrize("raw, clean", [("Home", "home"), ("  urgent ", "urgent"), ("CI", "ci")])
def test_tags_are_normalised(raw, clean):
    assert normalize_tag(raw) == clean


@pytest.mark.parametrize("raw", ["", "  ", "two words"])
def test_invalid_tags_are_rejected(raw):
    with pytest.raises(ValueError, match="invalid tag"):
        normalize_tag(raw)


def test_task_tags_are_normalised_on_creation():
    task = Task(id=1, title="x", tags={"Home", "WORK"})
    assert task.tags == {"home", "work"}


def test_add_and_remove_tags():
    task = Task(id=1, title="x")
    task.add_tag("Errand")
    assert task.has_tag("errand")
    task.remove_tag("ERRAND")
    assert not task.has_tag("errand")


def test_store_accepts_tags_and_lists_tags_in_use():
    store = TaskStore()
    store.add("buy milk", tags=["errand", "home"])
    store.add("fix bike", tags=["Home"])
    assert store.tags() == ["errand", "home"]
"""

QUERY = '''"""Filtering tasks: a small immutable query object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from .models import Task, normalize_tag


@dataclass(frozen=True)
class Query:
    all_tags: frozenset = frozenset()
    any_tags: frozenset = frozenset()
    done: Optional[bool] = None
    text: Optional[str] = None

    @classmethod
    def build(cls, tag=None, tags=(), any_tags=(), done=None, text=None) -> "Query":
        wanted = set(tags) | ({tag} if tag else set())
        return cls(
            all_tags=frozenset(normalize_tag(t) for t in wanted),
            any_tags=frozenset(normalize_tag(t) for t in any_tags),
            done=done,
            text=text.lower() if text else None,
        )

    def matches(self, task: Task) -> bool:
        if self.done is not None and task.done != self.done:
            return False
        if not self.all_tags <= task.tags:
            return False
        if self.any_tags and not self.any_tags & task.tags:
            return False
        if self.text and self.text not in task.title.lower():
            return False
        return True

    def apply(self, tasks: Iterable[Task]) -> list:
        return [task for task in tasks if self.matches(task)]
'''

STORE_FILTER = (
    "    def tags(self) -> list[str]:\n",
    '''    def filter(self, query: Optional[Query] = None, **criteria) -> list[Task]:
        """Tasks matching `query`, or a query built from keyword criteria
        (tag=, tags=, any_tags=, done=, text=)."""
        query = query or Query.build(**criteria)
        return query.apply(self._tasks.values())

    def tags(self) -> list[str]:
''',
)
STORE_FILTER_IMPORT = (
    "from typing import Iterable\n\nfrom .models import Task\n",
    "from typing import Iterable, Optional\n\nfrom .models import Task\nfrom .query import Query\n",
)

TEST_QUERY = """import pytest

from tasklite import Query, TaskStore


@pytest.fixture
def store():
    s = TaskStore()
    s.add("buy milk", tags=["errand", "home"])
    s.add("fix bike", tags=["home"])
    s.add("file taxes", tags=["admin"])
    s.complete(2)
    return s


def titles(tasks):
    return [t.title for t in tasks]


def test_filter_by_single_tag(store):
    assert titles(store.filter(tag="home")) == ["buy milk", "fix bike"]


def test_filter_requires_all_tags(store):
    assert titles(store.filter(tags=["home", "errand"])) == ["buy milk"]


def test_filter_any_tags(store):
    assert titles(store.filter(any_tags=["admin", "errand"])) == ["buy milk", "file taxes"]


@pytest.mark.parametrize("done, expected", [(True, ["fix bike"]), (False, ["buy milk", "file taxes"])])
def test_filter_by_completion(store, done, expected):
    assert titles(store.filter(done=done)) == expected


def test_filter_by_text_is_case_insensitive(store):
    assert titles(store.filter(text="MILK")) == ["buy milk"]


def test_prebuilt_query(store):
    query = Query.build(tag="HOME", done=False)
    assert titles(store.filter(query)) == ["buy milk"]
"""

# ------------------------------------------------------------------------------------------------
# Feature: JSON persistence (issue #5) -- PRs #8 and #9
# ------------------------------------------------------------------------------------------------
ERRORS = '''"""Errors raised by tasklite."""


class TaskliteError(Exception):
    """Base class for tasklite errors."""


class SerializationError(TaskliteError, ValueError):
    """A stored task record or document is malformed."""
'''

SERIALIZE = '''"""Converting tasks to and from plain data."""

from __future__ import annotations

from .errors import SerializationError
from .models import Task


def task_to_dict(task: Task) -> dict:
    return {"id": task.id, "title": task.title, "done": task.done, "tags": sorted(task.tags)}


def task_from_dict(data: dict) -> Task:
    if not isinstance(data, dict):
        raise SerializationError(f"a task record must be an object, got {type(data).__name__}")
    missing = {"id", "title"} - data.keys()
    if missing:
        raise SerializationError(f"task record is missing {', '.join(sorted(missing))}")
    if not isinstance(data["id"], int) or data["id"] < 1:
        raise SerializationError(f"task id must be a positive integer, got {data['id']!r}")
    try:
        return Task(
            id=data["id"],
            title=data["title"],
            done=bool(data.get("done", False)),
            tags=set(data.get("tags", [])),
        )
    except ValueError as exc:
        raise SerializationError(f"task {data['id']}: {exc}") from None
'''

TEST_SERIALIZE = """import pytest

from tasklite import SerializationError, Task, task_from_dict, task_to_dict


def test_round_trip():
    task = Task(id=3, title="plan trip", done=True, tags={"travel"})
    assert task_from_dict(task_to_dict(task)) == task


def test_dict_is_plain_data():
    data = task_to_dict(Task(id=1, title="x", tags={"b", "a"}))
    assert data == {"id": 1, "title": "x", "done": False, "tags": ["a", "b"]}


@pytest.mark.parametrize(
    "record, message",
    [
        ({"title": "x"}, "missing id"),
        ({"id": 0, "title": "x"}, "positive integer"),
        ({"id": 1, "title": "  "}, "needs a title"),
        (["not", "a", "dict"], "must be an object"),
    ],
)
def test_malformed_records_raise(record, message):
    with pytest.raises(SerializationError, match=message):
        task_from_dict(record)
"""

SERIALIZE_STORE = """

FORMAT_VERSION = 1


def store_to_json(store) -> str:
    tasks = [task_to_dict(task) for task in store.list()]
    return json.dumps({"format": FORMAT_VERSION, "next_id": store._next_id, "tasks": tasks}, indent=2)


def store_from_json(text: str):
    from .store import TaskStore

    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SerializationError(f"not a tasklite document: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT_VERSION:
        raise SerializationError("unsupported tasklite document format")
    tasks = [task_from_dict(record) for record in document.get("tasks", [])]
    store = TaskStore()
    store._restore(tasks, document.get("next_id"))
    return store
"""

STORE_PERSIST = (
    "    def __len__(self) -> int:\n",
    '''    def save(self, path) -> None:
        """Write the store to `path` as a JSON document."""
        from .serialize import store_to_json

        Path(path).write_text(store_to_json(self))

    @classmethod
    def load(cls, path) -> "TaskStore":
        from .serialize import store_from_json

        return store_from_json(Path(path).read_text())

    def _restore(self, tasks: Iterable[Task], next_id: Optional[int] = None) -> None:
        self._tasks = {task.id: task for task in tasks}
        self._next_id = max([next_id or 1, *(task.id + 1 for task in self._tasks.values())])

    def __len__(self) -> int:
''',
)

TEST_PERSISTENCE = """import json

import pytest

from tasklite import SerializationError, TaskStore


def test_save_and_load_round_trip(tmp_path):
    store = TaskStore()
    store.add("buy milk", tags=["errand"])
    done = store.add("fix bike")
    store.complete(done.id)
    path = tmp_path / "tasks.json"
    store.save(path)
    loaded = TaskStore.load(path)
    assert [(t.id, t.title, t.done, t.tags) for t in loaded.list()] == [
        (1, "buy milk", False, {"errand"}),
        (2, "fix bike", True, set()),
    ]


def test_ids_continue_after_load(tmp_path):
    store = TaskStore()
    store.add("a")
    store.remove(store.add("b").id)
    store.save(tmp_path / "t.json")
    assert TaskStore.load(tmp_path / "t.json").add("c").id == 3


def test_document_has_a_format_version(tmp_path):
    TaskStore().save(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["format"] == 1


@pytest.mark.parametrize("text", ["not json", "[]", '{"format": 99}'])
def test_bad_documents_are_rejected(tmp_path, text):
    (tmp_path / "t.json").write_text(text)
    with pytest.raises(SerializationError):
        TaskStore.load(tmp_path / "t.json")
"""

CHANGES_020 = """## [0.2.0] - 2026-03-10

### Added
- Tasks can carry tags; tags are case-insensitive single words, and a store lists the tags in use (#4, part of #3).
- Stores can be filtered by tags, by completion and by words in the title (#6, fixes #3).
- Tasks convert to and from plain dictionaries, with clear errors for malformed records (#8).
- Whole stores can be saved to and loaded from JSON documents, keeping their numbering (#9, fixes #5).

"""

# ------------------------------------------------------------------------------------------------
# Feature: due dates (issue #11) -- PRs #12, #13, #14
# ------------------------------------------------------------------------------------------------
MODELS_DUE_IMPORT = (
    "from dataclasses import dataclass, field\n",
    "from dataclasses import dataclass, field\nfrom datetime import date\nfrom typing import Optional\n",
)
MODELS_DUE_FIELD = (
    "    tags: set[str] = field(default_factory=set)\n",
    "    tags: set[str] = field(default_factory=set)\n    due: Optional[date] = None\n",
)
MODELS_DUE_METHOD = (
    "    def add_tag(self, tag: str) -> None:\n",
    '''    def is_overdue(self, today: date) -> bool:
        """Open tasks whose due date has passed are overdue; done tasks never are."""
        return not self.done and self.due is not None and self.due < today

    def add_tag(self, tag: str) -> None:
''',
)
SERIALIZE_DUE_TO = (
    """    return {"id": task.id, "title": task.title, "done": task.done, "tags": sorted(task.tags)}
""",
    """    data = {"id": task.id, "title": task.title, "done": task.done, "tags": sorted(task.tags)}
    data["due"] = task.due.isoformat() if task.due else None
    return data


def _parse_due(value):
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise SerializationError(f"due date must be YYYY-MM-DD, got {value!r}") from None
""",
)
SERIALIZE_DUE_FROM = (
    """            tags=set(data.get("tags", [])),
        )""",
    """            tags=set(data.get("tags", [])),
            due=_parse_due(data.get("due")),
        )""",
)
SERIALIZE_DUE_IMPORT = (
    "from .errors import SerializationError\n",
    "from datetime import date\n\nfrom .errors import SerializationError\n",
)
STORE_DUE_ADD = (
    """    def add(self, title: str, tags: Iterable[str] = ()) -> Task:
        task = Task(id=self._next_id, title=title, tags=set(tags))
""",
    """    def add(self, title: str, tags: Iterable[str] = (), due: Optional[date] = None) -> Task:
        task = Task(id=self._next_id, title=title, tags=set(tags), due=due)
""",
)
STORE_DUE_IMPORT = (
    "from typing import Iterable, Optional\n",
    "from datetime import date\nfrom typing import Iterable, Optional\n",
)

TEST_DUE = """from datetime import date

import pytest

from tasklite import SerializationError, Task, TaskStore, task_from_dict, task_to_dict

TODAY = date(2026, 4, 1)


def test_tasks_have_no_due_date_by_default():
    assert TaskStore().add("x").due is None


@pytest.mark.parametrize(
    "due, done, overdue",
    [(date(2026, 3, 31), False, True), (date(2026, 4, 1), False, False), (date(2026, 3, 1), True, False), (None, False, False)],
)
def test_is_overdue(due, done, overdue):
    assert Task(id=1, title="x", due=due, done=done).is_overdue(TODAY) is overdue


def test_due_dates_round_trip_through_dicts():
    task = Task(id=1, title="x", due=date(2026, 5, 17))
    assert task_to_dict(task)["due"] == "2026-05-17"
    assert task_from_dict(task_to_dict(task)).due == date(2026, 5, 17)


def test_bad_due_date_is_a_serialization_error():
    with pytest.raises(SerializationError, match="YYYY-MM-DD"):
        task_from_dict({"id": 1, "title": "x", "due": "next tuesday"})
"""

QUERY_DUE_FIELDS = (
    "    text: Optional[str] = None\n\n    @classmethod",
    """    text: Optional[str] = None
    due_before: Optional[date] = None
    due_after: Optional[date] = None
    overdue_on: Optional[date] = None

    @classmethod""",
)
QUERY_DUE_BUILD = (
    """    def build(cls, tag=None, tags=(), any_tags=(), done=None, text=None) -> "Query":""",
    """    def build(cls, tag=None, tags=(), any_tags=(), done=None, text=None, due_before=None,
              due_after=None, overdue_on=None) -> "Query":""",
)
QUERY_DUE_BUILD_ARGS = (
    """            text=text.lower() if text else None,
        )""",
    """            text=text.lower() if text else None,
            due_before=due_before,
            due_after=due_after,
            overdue_on=overdue_on,
        )""",
)
QUERY_DUE_MATCH = (
    """        if self.text and self.text not in task.title.lower():
            return False
""",
    """        if self.text and self.text not in task.title.lower():
            return False
        if self.due_before and not (task.due and task.due < self.due_before):
            return False
        if self.due_after and not (task.due and task.due > self.due_after):
            return False
        if self.overdue_on and not task.is_overdue(self.overdue_on):
            return False
""",
)
QUERY_DUE_IMPORT = (
    "from dataclasses import dataclass\n",
    "from dataclasses import dataclass\nfrom datetime import date\n",
)
STORE_OVERDUE = (
    "    def tags(self) -> list[str]:\n",
    '''    def overdue(self, today: date) -> list[Task]:
        """Open tasks whose due date is before `today`."""
        return self.filter(overdue_on=today)

    def upcoming(self, today: date, days: int = 7) -> list[Task]:
        """Open tasks due from `today` up to `days` days ahead."""
        horizon = today + timedelta(days=days + 1)
        return self.filter(done=False, due_before=horizon, due_after=today - timedelta(days=1))

    def tags(self) -> list[str]:
''',
)
STORE_OVERDUE_IMPORT = ("from datetime import date\n", "from datetime import date, timedelta\n")
TEST_DUE_QUERIES = """

@pytest.fixture
def store():
    s = TaskStore()
    s.add("pay rent", due=date(2026, 3, 30))
    s.add("renew passport", due=date(2026, 4, 5))
    s.add("someday", due=None)
    s.add("send invoice", due=date(2026, 4, 20))
    done = s.add("old chore", due=date(2026, 3, 1))
    s.complete(done.id)
    return s


def test_overdue(store):
    assert [t.title for t in store.overdue(TODAY)] == ["pay rent"]


def test_upcoming_within_a_week(store):
    assert [t.title for t in store.upcoming(TODAY)] == ["renew passport"]


@pytest.mark.parametrize("days, expected", [(0, []), (30, ["renew passport", "send invoice"])])
def test_upcoming_horizon(store, days, expected):
    assert [t.title for t in store.upcoming(TODAY, days=days)] == expected


def test_filter_due_before(store):
    assert [t.title for t in store.filter(due_before=date(2026, 4, 1), done=False)] == ["pay rent"]
"""

QUERY_ORDER_FIELD = (
    "    overdue_on: Optional[date] = None\n\n    @classmethod",
    """    overdue_on: Optional[date] = None
    order_by: Optional[str] = None

    @classmethod""",
)
QUERY_ORDER_BUILD = (
    """              due_after=None, overdue_on=None) -> "Query":""",
    """              due_after=None, overdue_on=None, order_by=None) -> "Query":
        if order_by is not None and order_by.lstrip("-") not in SORT_KEYS:
            raise ValueError(f"cannot order by {order_by!r}; choose from {', '.join(SORT_KEYS)}")""",
)
QUERY_ORDER_BUILD_ARGS = (
    """            overdue_on=overdue_on,
        )""",
    """            overdue_on=overdue_on,
            order_by=order_by,
        )""",
)
QUERY_ORDER_APPLY = (
    """    def apply(self, tasks: Iterable[Task]) -> list:
        return [task for task in tasks if self.matches(task)]
""",
    """    def apply(self, tasks: Iterable[Task]) -> list:
        found = [task for task in tasks if self.matches(task)]
        if self.order_by:
            key = SORT_KEYS[self.order_by.lstrip("-")]
            found.sort(key=key, reverse=self.order_by.startswith("-"))
        return found


# Tasks without a due date sort after every dated task.
SORT_KEYS = {
    "id": lambda task: task.id,
    "title": lambda task: task.title.lower(),
    "due": lambda task: (task.due is None, task.due or date.max, task.id),
}
""",
)
STORE_ORDER_LIST = (
    """    def list(self, include_done: bool = True) -> list[Task]:
        return [t for t in self._tasks.values() if include_done or not t.done]
""",
    """    def list(self, include_done: bool = True, order_by: Optional[str] = None) -> list[Task]:
        query = Query.build(done=None if include_done else False, order_by=order_by)
        return query.apply(self._tasks.values())
""",
)
TEST_SORTING = """from datetime import date

import pytest

from tasklite import Query, TaskStore


@pytest.fixture
def store():
    s = TaskStore()
    s.add("Write report", due=date(2026, 5, 2))
    s.add("answer email")
    s.add("book flights", due=date(2026, 4, 20))
    return s


@pytest.mark.parametrize(
    "order_by, expected",
    [
        ("id", ["Write report", "answer email", "book flights"]),
        ("title", ["answer email", "book flights", "Write report"]),
        ("-title", ["Write report", "book flights", "answer email"]),
        ("due", ["book flights", "Write report", "answer email"]),
    ],
)
def test_list_ordering(store, order_by, expected):
    assert [t.title for t in store.list(order_by=order_by)] == expected


def test_unknown_order_is_rejected():
    with pytest.raises(ValueError, match="cannot order by"):
        Query.build(order_by="colour")
"""

CHANGES_030 = """## [0.3.0] - 2026-03-17

### Added
- Tasks may have a due date, which survives saving and loading (#12, part of #11).
- Stores answer which tasks are overdue and which are coming up in the next days (#13, fixes #11).
- Task lists can be ordered by due date, title or creation, ascending or descending (#14).
- Tasks can be exported as CSV for spreadsheets (#16, fixes #15).
- Tasks can be exported as a Markdown checklist (#17).

"""

# ------------------------------------------------------------------------------------------------
# Feature: exports (issue #15) -- PRs #16 and #17
# ------------------------------------------------------------------------------------------------
EXPORT = '''"""Exporting tasks for other tools."""

from __future__ import annotations

import csv
import io
from typing import Iterable

from .models import Task

CSV_COLUMNS = ["id", "title", "done", "tags", "due"]


def _row(task: Task) -> dict:
    return {
        "id": task.id,
        "title": task.title,
        "done": "yes" if task.done else "no",
        "tags": " ".join(sorted(task.tags)),
        "due": task.due.isoformat() if task.due else "",
    }


def to_csv(tasks: Iterable[Task]) -> str:
    """CSV text with a header row; tags are space separated."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\\n")
    writer.writeheader()
    for task in tasks:
        writer.writerow(_row(task))
    return buffer.getvalue()
'''
STORE_EXPORT = (
    "    def _restore(",
    '''    def export_csv(self, path) -> int:
        """Write every task to `path` as CSV; return how many were written."""
        from .export import to_csv

        tasks = self.list()
        Path(path).write_text(to_csv(tasks))
        return len(tasks)

    def _restore(''',
)
TEST_EXPORT = """import csv
import io
from datetime import date

from tasklite import TaskStore, to_csv


def make_store():
    s = TaskStore()
    s.add("buy milk", tags=["home", "errand"], due=date(2026, 4, 2))
    s.add('say "hi", loudly')
    s.complete(2)
    return s


def test_csv_has_header_and_rows():
    rows = list(csv.DictReader(io.StringIO(to_csv(make_store().list()))))
    assert rows[0] == {"id": "1", "title": "buy milk", "done": "no", "tags": "errand home", "due": "2026-04-02"}
    assert rows[1]["title"] == 'say "hi", loudly'
    assert rows[1]["done"] == "yes"


def test_export_csv_writes_file(tmp_path):
    count = make_store().export_csv(tmp_path / "tasks.csv")
    assert count == 2
    assert (tmp_path / "tasks.csv").read_text().splitlines()[0] == "id,title,done,tags,due"


def test_empty_store_exports_header_only():
    assert to_csv([]) == "id,title,done,tags,due\\n"
"""
EXPORT_MD = '''

def to_markdown(tasks: Iterable[Task]) -> str:
    """A GitHub-style checklist, one task per line, tags as `#tag` and the due date last."""
    lines = []
    for task in tasks:
        box = "x" if task.done else " "
        parts = [f"- [{box}] {task.title}"]
        parts += [f"#{tag}" for tag in sorted(task.tags)]
        if task.due:
            parts.append(f"(due {task.due.isoformat()})")
        lines.append(" ".join(parts))
    return "\\n".join(lines) + ("\\n" if lines else "")
'''
TEST_EXPORT_MD = """

def test_markdown_checklist():
    from tasklite import to_markdown

    assert to_markdown(make_store().list()) == (
        "- [ ] buy milk #errand #home (due 2026-04-02)\\n"
        '- [x] say "hi", loudly\\n'
    )


def test_markdown_of_nothing_is_empty():
    from tasklite import to_markdown

    assert to_markdown([]) == ""
"""

# ------------------------------------------------------------------------------------------------
# Feature: priorities (issue #18) -- PRs #19 and #20
# ------------------------------------------------------------------------------------------------
MODELS_PRIO_IMPORT = ("from datetime import date\n", "from datetime import date\nfrom enum import IntEnum\n")
MODELS_PRIO_CLASS = (
    "@dataclass\nclass Task:\n",
    '''class Priority(IntEnum):
    LOW = 1
    NORMAL = 2
    HIGH = 3
    URGENT = 4


def parse_priority(value) -> Priority:
    """Accept a Priority, its number, or its name in any case."""
    if isinstance(value, Priority):
        return value
    if isinstance(value, int):
        return Priority(value)
    try:
        return Priority[str(value).strip().upper()]
    except KeyError:
        names = ", ".join(p.name.lower() for p in Priority)
        raise ValueError(f"unknown priority {value!r}; choose from {names}") from None


@dataclass
class Task:
''',
)
MODELS_PRIO_FIELD = (
    "    due: Optional[date] = None\n",
    "    due: Optional[date] = None\n    priority: Priority = Priority.NORMAL\n",
)
MODELS_PRIO_POST = (
    "        self.tags = {normalize_tag(t) for t in self.tags}\n",
    "        self.tags = {normalize_tag(t) for t in self.tags}\n        self.priority = parse_priority(self.priority)\n",
)
SERIALIZE_PRIO_TO = (
    """    data["due"] = task.due.isoformat() if task.due else None
""",
    """    data["due"] = task.due.isoformat() if task.due else None
    data["priority"] = task.priority.name.lower()
""",
)
SERIALIZE_PRIO_FROM = (
    """            due=_parse_due(data.get("due")),
        )""",
    """            due=_parse_due(data.get("due")),
            priority=data.get("priority", "normal"),
        )""",
)
STORE_PRIO_ADD = (
    """    def add(self, title: str, tags: Iterable[str] = (), due: Optional[date] = None) -> Task:
        task = Task(id=self._next_id, title=title, tags=set(tags), due=due)
""",
    """    def add(self, title: str, tags: Iterable[str] = (), due: Optional[date] = None, priority="normal") -> Task:
        task = Task(id=self._next_id, title=title, tags=set(tags), due=due, priority=priority)
""",
)
TEST_PRIORITY = """import pytest

from tasklite import Priority, Task, TaskStore, parse_priority, task_from_dict, task_to_dict


@pytest.mark.parametrize("value, expected", [("high", Priority.HIGH), ("URGENT", Priority.URGENT), (1, Priority.LOW)])
def test_parse_priority(value, expected):
    assert parse_priority(value) is expected


def test_unknown_priority_is_rejected():
    with pytest.raises(ValueError, match="unknown priority"):
        parse_priority("whenever")


def test_default_priority_is_normal():
    assert TaskStore().add("x").priority is Priority.NORMAL


def test_priority_round_trips():
    task = Task(id=1, title="x", priority="high")
    assert task_to_dict(task)["priority"] == "high"
    assert task_from_dict(task_to_dict(task)).priority is Priority.HIGH


def test_old_records_default_to_normal():
    assert task_from_dict({"id": 1, "title": "x"}).priority is Priority.NORMAL
"""
QUERY_PRIO_FIELD = (
    "    order_by: Optional[str] = None\n\n    @classmethod",
    "    order_by: Optional[str] = None\n    min_priority: Optional[Priority] = None\n\n    @classmethod",
)
QUERY_PRIO_BUILD = (
    """              due_after=None, overdue_on=None, order_by=None) -> "Query":""",
    """              due_after=None, overdue_on=None, order_by=None, min_priority=None) -> "Query":""",
)
QUERY_PRIO_BUILD_ARGS = (
    """            order_by=order_by,
        )""",
    """            order_by=order_by,
            min_priority=parse_priority(min_priority) if min_priority is not None else None,
        )""",
)
QUERY_PRIO_MATCH = (
    """        if self.overdue_on and not task.is_overdue(self.overdue_on):
            return False
""",
    """        if self.overdue_on and not task.is_overdue(self.overdue_on):
            return False
        if self.min_priority is not None and task.priority < self.min_priority:
            return False
""",
)
QUERY_PRIO_SORT = (
    """    "due": lambda task: (task.due is None, task.due or date.max, task.id),
""",
    """    "due": lambda task: (task.due is None, task.due or date.max, task.id),
    "priority": lambda task: (-task.priority, task.id),
""",
)
QUERY_PRIO_IMPORT = (
    "from .models import Task, normalize_tag\n",
    "from .models import Priority, Task, normalize_tag, parse_priority\n",
)
EXPORT_PRIO = (
    'CSV_COLUMNS = ["id", "title", "done", "tags", "due"]',
    'CSV_COLUMNS = ["id", "title", "done", "tags", "due", "priority"]',
)
EXPORT_PRIO_ROW = (
    """        "due": task.due.isoformat() if task.due else "",
    }""",
    """        "due": task.due.isoformat() if task.due else "",
        "priority": task.priority.name.lower(),
    }""",
)
TEST_PRIORITY_QUERIES = """

@pytest.fixture
def store():
    s = TaskStore()
    s.add("water plants", priority="low")
    s.add("fix leak", priority="urgent")
    s.add("call bank", priority="high")
    s.add("read book")
    return s


def test_filter_by_minimum_priority(store):
    assert [t.title for t in store.filter(min_priority="high")] == ["fix leak", "call bank"]


def test_order_by_priority(store):
    assert [t.title for t in store.list(order_by="priority")] == ["fix leak", "call bank", "read book", "water plants"]
"""

CHANGES_040 = """## [0.4.0] - 2026-03-24

### Added
- Tasks have a priority from low to urgent, kept when saving (#19, part of #18).
- Stores filter by a minimum priority and order by priority; CSV exports include it (#20, fixes #18).
- A `tasklite` command adds, lists and completes tasks in a JSON file, and shows a history of the changes it made (#22, part of #21).
- The command exports CSV or Markdown and lists overdue tasks (#23, fixes #21).

"""

# ------------------------------------------------------------------------------------------------
# Feature: command line (issue #21) -- PRs #22 and #23
# ------------------------------------------------------------------------------------------------
CLI = '''"""The `tasklite` command: a task list in a JSON file."""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path
from typing import Optional, Sequence

from .store import TaskStore


def _open(path: Path) -> TaskStore:
    return TaskStore.load(path) if path.exists() else TaskStore()


def _record(state_dir: Path, line: str) -> None:
    """Append one change to the history in `state_dir`."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "history", "a") as history:
        history.write(line + "\\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tasklite", description="Manage a task list stored as JSON.")
    parser.add_argument("--file", type=Path, default=Path("tasks.json"), help="the task file")
    parser.add_argument(
        "--state-dir", type=Path, default=Path(".tasklite"), help="where the history of changes is kept"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    add = commands.add_parser("add", help="add a task")
    add.add_argument("title")
    add.add_argument("--tag", action="append", default=[])
    add.add_argument("--due", type=date.fromisoformat)
    add.add_argument("--priority", default="normal")

    show = commands.add_parser("list", help="list open tasks")
    show.add_argument("--all", action="store_true", help="include done tasks")
    show.add_argument("--tag")

    done = commands.add_parser("done", help="mark a task done")
    done.add_argument("id", type=int)

    commands.add_parser("history", help="show the changes made so far")
    return parser


def main(argv: Optional[Sequence[str]] = None, out=None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    store = _open(args.file)
    try:
        if args.command == "add":
            task = store.add(args.title, tags=args.tag, due=args.due, priority=args.priority)
            store.save(args.file)
            print(f"added {task.id}: {task.title}", file=out)
            _record(args.state_dir, f"added {task.id}: {task.title}")
        elif args.command == "list":
            tasks = store.filter(tag=args.tag, done=None if args.all else False)
            for task in tasks:
                print(f"{task.id:>3} [{'x' if task.done else ' '}] {task.title}", file=out)
        elif args.command == "done":
            store.complete(args.id)
            store.save(args.file)
            print(f"done {args.id}", file=out)
            _record(args.state_dir, f"done {args.id}")
        elif args.command == "history":
            history = args.state_dir / "history"
            if history.exists():
                out.write(history.read_text())
    except (KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
'''
MAIN = """from .cli import main

raise SystemExit(main())
"""
TEST_CLI = """from pathlib import Path

import pytest

from tasklite import TaskStore
from tasklite.cli import main


def run(tmp_path, *argv):
    return main(["--file", str(tmp_path / "tasks.json"), "--state-dir", str(tmp_path / "state"), *argv])


def test_add_then_list(tmp_path, capsys):
    assert run(tmp_path, "add", "buy milk", "--tag", "home") == 0
    assert run(tmp_path, "add", "fix bike") == 0
    assert capsys.readouterr().out == "added 1: buy milk\\nadded 2: fix bike\\n"
    assert run(tmp_path, "list", "--tag", "home") == 0
    assert capsys.readouterr().out == "  1 [ ] buy milk\\n"


def test_done_hides_task_unless_all(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "done", "1")
    capsys.readouterr()
    run(tmp_path, "list")
    assert capsys.readouterr().out == ""
    run(tmp_path, "list", "--all")
    assert "[x] a" in capsys.readouterr().out


def test_unknown_task_is_an_error(tmp_path, capsys):
    assert run(tmp_path, "done", "9") == 1
    assert "no task with id 9" in capsys.readouterr().err


def test_priority_and_due_are_stored(tmp_path):
    run(tmp_path, "add", "pay rent", "--due", "2026-04-01", "--priority", "high")
    task = TaskStore.load(tmp_path / "tasks.json").get(1)
    assert (task.due.isoformat(), task.priority.name) == ("2026-04-01", "HIGH")


def test_missing_command_exits():
    with pytest.raises(SystemExit):
        main([])


def test_history_lists_changes(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "list")
    run(tmp_path, "done", "1")
    capsys.readouterr()
    assert run(tmp_path, "history") == 0
    assert capsys.readouterr().out == "added 1: a\\ndone 1\\n"


def test_first_run_creates_history(tmp_path):
    # without --state-dir the history goes to .tasklite/ in the current directory
    assert main(["--file", str(tmp_path / "tasks.json"), "add", "buy milk"]) == 0
    assert Path(".tasklite", "history").read_text() == "added 1: buy milk\\n"
"""
CLI_MORE_PARSER = (
    """    commands.add_parser("history", help="show the changes made so far")
    return parser""",
    """    commands.add_parser("history", help="show the changes made so far")

    export = commands.add_parser("export", help="print every task as CSV or Markdown")
    export.add_argument("--format", choices=["csv", "md"], default="csv")

    overdue = commands.add_parser("overdue", help="list overdue tasks")
    overdue.add_argument("--today", type=date.fromisoformat, default=None)
    return parser""",
)
CLI_MORE_MAIN = (
    """                out.write(history.read_text())
""",
    """                out.write(history.read_text())
        elif args.command == "export":
            render = to_csv if args.format == "csv" else to_markdown
            out.write(render(store.list()))
        elif args.command == "overdue":
            for task in store.overdue(args.today or date.today()):
                print(f"{task.id:>3} {task.due.isoformat()} {task.title}", file=out)
""",
)
CLI_MORE_IMPORT = (
    "from .store import TaskStore\n",
    "from .export import to_csv, to_markdown\nfrom .store import TaskStore\n",
)
TEST_CLI_MORE = """

def test_export_formats(tmp_path, capsys):
    run(tmp_path, "add", "buy milk", "--tag", "home")
    capsys.readouterr()
    run(tmp_path, "export", "--format", "md")
    assert capsys.readouterr().out == "- [ ] buy milk #home\\n"
    run(tmp_path, "export")
    assert capsys.readouterr().out.startswith("id,title,done,tags,due,priority\\n1,buy milk,no,home,,normal")


def test_overdue_command(tmp_path, capsys):
    run(tmp_path, "add", "pay rent", "--due", "2026-03-30")
    run(tmp_path, "add", "later", "--due", "2026-06-01")
    capsys.readouterr()
    run(tmp_path, "overdue", "--today", "2026-04-01")
    assert capsys.readouterr().out == "  1 2026-03-30 pay rent\\n"
"""


# ------------------------------------------------------------------------------------------------
# Refactor: a tag index (issue #24) -- PRs #25 and #26. Tag lookups stop scanning every task;
# the behaviour is unchanged, so the tests written for it pass before the change as well.
# ------------------------------------------------------------------------------------------------
INDEX = '''"""An inverted index from tags to task ids, so tag lookups need not scan every task."""

from __future__ import annotations

from typing import Iterable

from .models import Task


class TagIndex:
    """The ids of the tasks carrying each tag.

    `TaskStore` keeps one in step with its tasks: tasks are indexed when added or loaded,
    dropped when removed, and re-indexed when `Task.add_tag` or `Task.remove_tag` change them.
    """

    def __init__(self, tasks: Iterable[Task] = ()) -> None:
        self._ids: dict[str, set[int]] = {}
        for task in tasks:
            self.add(task)

    def add(self, task: Task) -> None:
        for tag in task.tags:
            self.tag(task.id, tag)

    def discard(self, task: Task) -> None:
        for tag in task.tags:
            self.untag(task.id, tag)

    def tag(self, task_id: int, tag: str) -> None:
        self._ids.setdefault(tag, set()).add(task_id)

    def untag(self, task_id: int, tag: str) -> None:
        ids = self._ids.get(tag)
        if ids is None:
            return
        ids.discard(task_id)
        if not ids:
            del self._ids[tag]  # a tag no task carries is no longer in use

    def ids_with_all(self, tags: Iterable[str]) -> set[int]:
        """Ids of the tasks carrying every one of `tags`."""
        postings = sorted((self._ids.get(tag, set()) for tag in tags), key=len)
        if not postings:
            raise ValueError("ids_with_all needs at least one tag")
        found = set(postings[0])
        for ids in postings[1:]:
            if not found:
                break
            found &= ids
        return found

    def ids_with_any(self, tags: Iterable[str]) -> set[int]:
        """Ids of the tasks carrying at least one of `tags`."""
        found: set[int] = set()
        for tag in tags:
            found |= self._ids.get(tag, set())
        return found

    def count(self, tag: str) -> int:
        return len(self._ids.get(tag, ()))

    def tags(self) -> list[str]:
        """Every tag in use, sorted."""
        return sorted(self._ids)

    def __contains__(self, tag: object) -> bool:
        return tag in self._ids

    def __len__(self) -> int:
        return len(self._ids)
'''
MODELS_INDEX_IMPORT = (
    "from typing import Optional\n",
    "from typing import Callable, Optional\n",
)
MODELS_INDEX_FIELD = (
    "    priority: Priority = Priority.NORMAL\n",
    """    priority: Priority = Priority.NORMAL
    # Called as (task, tag, added) when add_tag or remove_tag changes the tags, so that the
    # store holding the task can keep its tag index current. Not part of the record.
    on_tag_change: Optional[Callable[["Task", str, bool], None]] = field(
        default=None, init=False, repr=False, compare=False
    )
""",
)
MODELS_INDEX_METHODS = (
    """    def add_tag(self, tag: str) -> None:
        self.tags.add(normalize_tag(tag))

    def remove_tag(self, tag: str) -> None:
        self.tags.discard(normalize_tag(tag))
""",
    """    def add_tag(self, tag: str) -> None:
        tag = normalize_tag(tag)
        if tag not in self.tags:
            self.tags.add(tag)
            self._tags_changed(tag, True)

    def remove_tag(self, tag: str) -> None:
        tag = normalize_tag(tag)
        if tag in self.tags:
            self.tags.discard(tag)
            self._tags_changed(tag, False)

    def _tags_changed(self, tag: str, added: bool) -> None:
        if self.on_tag_change is not None:
            self.on_tag_change(self, tag, added)
""",
)
STORE_INDEX_IMPORT = (
    "from .models import Task\n",
    "from .index import TagIndex\nfrom .models import Task\n",
)
STORE_INDEX_INIT = (
    """        self._tasks: dict[int, Task] = {}
        self._next_id = 1
""",
    """        self._tasks: dict[int, Task] = {}
        self._next_id = 1
        self._index = TagIndex()
""",
)
STORE_INDEX_ADD = (
    """        task = Task(id=self._next_id, title=title, tags=set(tags), due=due, priority=priority)
        self._tasks[task.id] = task
        self._next_id += 1
""",
    """        task = Task(id=self._next_id, title=title, tags=set(tags), due=due, priority=priority)
        self._track(task)
        self._next_id += 1
""",
)
STORE_INDEX_REMOVE = (
    """    def remove(self, task_id: int) -> None:
        self.get(task_id)
        del self._tasks[task_id]
""",
    """    def remove(self, task_id: int) -> None:
        task = self.get(task_id)
        del self._tasks[task_id]
        self._index.discard(task)
        task.on_tag_change = None
""",
)
STORE_INDEX_TAGS = (
    """        return sorted({tag for task in self._tasks.values() for tag in task.tags})
""",
    """        return self._index.tags()
""",
)
STORE_INDEX_RESTORE = (
    """    def _restore(self, tasks: Iterable[Task], next_id: Optional[int] = None) -> None:
        self._tasks = {task.id: task for task in tasks}
        self._next_id = max([next_id or 1, *(task.id + 1 for task in self._tasks.values())])
""",
    """    def _restore(self, tasks: Iterable[Task], next_id: Optional[int] = None) -> None:
        self._tasks = {}
        self._index = TagIndex()
        for task in sorted(tasks, key=lambda task: task.id):
            self._track(task)
        self._next_id = max([next_id or 1, *(task.id + 1 for task in self._tasks.values())])

    def _track(self, task: Task) -> None:
        \"\"\"Hold `task` and index its tags; tasks are kept in id order.\"\"\"
        self._tasks[task.id] = task
        self._index.add(task)
        task.on_tag_change = self._retag

    def _retag(self, task: Task, tag: str, added: bool) -> None:
        if added:
            self._index.tag(task.id, tag)
        else:
            self._index.untag(task.id, tag)
""",
)
QUERY_INDEX_METHOD = (
    """    def apply(self, tasks: Iterable[Task]) -> list:
""",
    """    def candidate_ids(self, index: TagIndex) -> Optional[set]:
        \"\"\"The ids of the only tasks that can match, looked up in `index`; None when the
        query has no tag criteria, so that every task has to be checked.\"\"\"
        ids = index.ids_with_all(self.all_tags) if self.all_tags else None
        if self.any_tags:
            some = index.ids_with_any(self.any_tags)
            ids = some if ids is None else ids & some
        return ids

    def apply(self, tasks: Iterable[Task]) -> list:
""",
)
QUERY_INDEX_IMPORT = (
    "from .models import Priority, Task, normalize_tag, parse_priority\n",
    "from .index import TagIndex\nfrom .models import Priority, Task, normalize_tag, parse_priority\n",
)
STORE_INDEX_FILTER = (
    """        query = query or Query.build(**criteria)
        return query.apply(self._tasks.values())
""",
    """        query = query or Query.build(**criteria)
        return query.apply(self._candidates(query))

    def _candidates(self, query: Query) -> Iterable[Task]:
        \"\"\"The tasks `query` has to look at: those the tag index allows, in id order.\"\"\"
        ids = query.candidate_ids(self._index)
        if ids is None:
            return self._tasks.values()
        return [self._tasks[task_id] for task_id in sorted(ids)]
""",
)
TEST_TAG_INDEX = """import pytest

from tasklite import TaskStore


@pytest.fixture
def store():
    s = TaskStore()
    s.add("buy milk", tags=["errand", "home"])
    s.add("fix bike", tags=["home"])
    s.add("file taxes", tags=["admin"])
    return s


def titles(tasks):
    return [t.title for t in tasks]


def test_tags_in_use_follow_removals(store):
    store.remove(3)
    assert store.tags() == ["errand", "home"]
    store.remove(1)
    assert store.tags() == ["home"]


def test_tags_added_to_a_stored_task_are_found(store):
    store.get(3).add_tag("Urgent")
    assert store.tags() == ["admin", "errand", "home", "urgent"]
    assert titles(store.filter(tag="urgent")) == ["file taxes"]


def test_tags_removed_from_a_stored_task_are_forgotten(store):
    store.get(2).remove_tag("home")
    assert titles(store.filter(tag="home")) == ["buy milk"]
    store.get(1).remove_tag("HOME")
    assert store.tags() == ["admin", "errand"]
    assert store.filter(tag="home") == []


def test_removed_task_is_not_found_by_tag(store):
    task = store.get(1)
    store.remove(1)
    task.add_tag("late")
    assert titles(store.filter(tag="home")) == ["fix bike"]
    assert store.filter(tag="errand") == [] and store.filter(tag="late") == []
    assert store.tags() == ["admin", "home"]


def test_loaded_store_finds_tasks_by_tag(store, tmp_path):
    store.save(tmp_path / "tasks.json")
    loaded = TaskStore.load(tmp_path / "tasks.json")
    assert loaded.tags() == ["admin", "errand", "home"]
    loaded.get(2).add_tag("bike")
    assert titles(loaded.filter(tag="bike")) == ["fix bike"]
    assert titles(loaded.filter(tag="home")) == ["buy milk", "fix bike"]
"""
TEST_TAG_INDEX_QUERIES = """

def test_unknown_tags_match_nothing(store):
    assert store.filter(tag="garden") == []
    assert store.filter(tags=["home", "garden"]) == []
    assert titles(store.filter(any_tags=["garden", "admin"])) == ["file taxes"]


def test_tag_filters_combine_with_other_criteria(store):
    store.complete(2)
    assert titles(store.filter(tag="home", done=False)) == ["buy milk"]
    assert titles(store.filter(any_tags=["admin", "home"], text="bike")) == ["fix bike"]
    assert titles(store.filter(tags=["home"], any_tags=["errand", "admin"])) == ["buy milk"]
    assert titles(store.filter(any_tags=["home", "admin"], order_by="-title")) == ["fix bike", "file taxes", "buy milk"]


def test_big_store_tag_lookups():
    store = TaskStore()
    for n in range(3000):
        store.add(f"task {n}", tags=[f"t{n % 7}", "even" if n % 2 == 0 else "odd"])
    assert [t.id for t in store.filter(tags=["t3", "even"])] == [n + 1 for n in range(3000) if n % 7 == 3 and n % 2 == 0]
    assert len(store.filter(any_tags=["t0", "t1"])) == sum(1 for n in range(3000) if n % 7 in (0, 1))
    assert store.tags() == ["even", "odd", "t0", "t1", "t2", "t3", "t4", "t5", "t6"]
"""

CHANGES_050 = """## [0.5.0] - 2026-03-31

### Changed
- Stores keep an index of their tags, so filtering by tag and listing the tags in use no longer look at every task (#25, part of #24).
- Filters that combine tags with other criteria only check the tasks carrying those tags (#26, fixes #24).

"""


def _init_version(v: str, names: list[str], imports: str) -> str:
    return f'"""tasklite: a tiny task list library."""\n\n{imports}\n__version__ = "{v}"\n__all__ = {names!r}\n'


def build(dest: Path, *, tags: bool = True, changelog: bool = True, odd_files: bool = False) -> Path:
    """Write the tasklite repository to `dest` (which must not exist yet) and return it."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} already exists and is not empty")
    b = RepoBuilder(dest, START)
    b.git("remote", "add", "origin", "https://github.com/harnessforge-examples/tasklite.git")
    log = [CHANGELOG_HEAD]

    def changelog_with(section: str) -> dict:
        log.insert(1, section)
        return {"CHANGELOG.md": "".join(log)} if changelog else {}

    def release(version: str, section: str, names: list[str], imports: str) -> None:
        pyproject = re.sub(
            r'^version = ".*"$', f'version = "{version}"', (b.path / "pyproject.toml").read_text(), count=1, flags=re.M
        )
        b.commit(
            f"Release {version}",
            {
                **changelog_with(section),
                "pyproject.toml": pyproject,
                "tasklite/__init__.py": _init_version(version, names, imports),
            },
        )
        if tags:
            b.tag(f"v{version}", f"tasklite {version}")

    def edits(path: str, *pairs: tuple[str, str]):
        """A files-function applying snippet replacements to one file in order."""

        def apply(builder: RepoBuilder) -> dict:
            text = (builder.path / path).read_text()
            for old, new in pairs:
                if text.count(old) != 1:
                    raise ValueError(f"{path}: snippet occurs {text.count(old)} times: {old[:60]!r}")
                text = text.replace(old, new)
            return {path: text}

        return apply

    def append(path: str, text: str):
        return lambda builder: {path: (builder.path / path).read_text() + text}

    def files(*parts):
        """Combine parts in order; each is written before the next reads the tree."""

        def apply(builder: RepoBuilder) -> dict:
            out: dict = {}
            for part in parts:
                step = part(builder) if callable(part) else part
                builder.write(step)
                out.update(step)
            return out

        return apply

    def init(names: list[str], imports: str, version: str = "0.1.0"):
        return {"tasklite/__init__.py": _init_version(version, names, imports)}

    # ---- v0.1.0 ---------------------------------------------------------------------------
    b.commit(
        "Initial commit",
        {
            "README.md": README,
            "LICENSE": LICENSE,
            ".gitignore": "__pycache__/\n*.egg-info/\n",
            "pyproject.toml": PYPROJECT,
        },
    )
    b.commit(
        "Add Task model and in-memory store",
        {
            "tasklite/__init__.py": INIT,
            "tasklite/models.py": MODELS,
            "tasklite/store.py": STORE,
            "tests/test_store.py": TEST_STORE,
        },
    )
    b.commit("Add CI workflow", {".github/workflows/ci.yml": CI})
    b.commit("Add a changelog", changelog_with(CHANGES_010) or {"README.md": README + "\nSee the releases page.\n"})
    if tags:
        b.tag("v0.1.0", "tasklite 0.1.0")

    # ---- tags (#3) and JSON persistence (#5), interleaved ---------------------------------
    names_020 = ["Query", "SerializationError", "Task", "TaskStore", "normalize_tag", "task_from_dict", "task_to_dict"]
    imports_020 = (
        "from .errors import SerializationError\nfrom .models import Task, normalize_tag\n"
        "from .query import Query\nfrom .serialize import task_from_dict, task_to_dict\nfrom .store import TaskStore\n"
    )
    b.merge_pr(
        4,
        "task-tags",
        "Add tags to tasks",
        [
            (
                "Add tags to the Task model\n\nTags are normalised to lower case; a tag is a single word.\n\nPart of #3",
                files(
                    edits(
                        "tasklite/models.py",
                        MODELS_TAGS_IMPORT,
                        MODELS_TAGS_FIELD,
                        MODELS_TAGS_POST,
                        MODELS_TAGS_METHODS,
                    )
                ),
            ),
            (
                "Accept tags when adding tasks\n\nTaskStore.add takes tags and TaskStore.tags() lists the tags in use.",
                files(
                    edits("tasklite/store.py", STORE_TAGS_IMPORT, STORE_TAGS_ADD, STORE_TAGS_LIST),
                    init(
                        ["Task", "TaskStore", "normalize_tag"],
                        "from .models import Task, normalize_tag\nfrom .store import TaskStore\n",
                    ),
                    {"tests/test_tags.py": TEST_TAGS},
                ),
            ),
        ],
    )
    b.squash_pr(
        8,
        "Serialize tasks to plain dicts",
        files(
            {
                "tasklite/errors.py": ERRORS,
                "tasklite/serialize.py": SERIALIZE,
                "tests/test_serialize.py": TEST_SERIALIZE,
            },
            init(
                ["SerializationError", "Task", "TaskStore", "normalize_tag", "task_from_dict", "task_to_dict"],
                "from .errors import SerializationError\nfrom .models import Task, normalize_tag\n"
                "from .serialize import task_from_dict, task_to_dict\nfrom .store import TaskStore\n",
            ),
        ),
        body="Records are validated so a corrupt file gives a clear SerializationError.\n\nRefs #5",
    )
    b.merge_pr(
        6,
        "tag-filter",
        "Filter tasks by tag",
        [
            ("Add a Query object for filtering tasks", {"tasklite/query.py": QUERY}),
            (
                "Add TaskStore.filter\n\nFilters by all/any tags, completion and title text.\n\nCloses #3",
                files(
                    edits("tasklite/store.py", STORE_FILTER_IMPORT, STORE_FILTER),
                    init(names_020, imports_020),
                    {"tests/test_query.py": TEST_QUERY},
                ),
            ),
        ],
    )
    b.commit(
        "docs: describe tags in the README",
        {"README.md": README + "\nTasks can carry tags: `store.add('x', tags=['home'])`.\n"},
    )
    b.merge_pr(
        9,
        "json-store",
        "Save and load task stores as JSON",
        [
            (
                "Add JSON documents for whole stores\n\nA document carries a format version so old files stay readable.",
                files(
                    edits(
                        "tasklite/serialize.py",
                        ("from __future__ import annotations\n", "from __future__ import annotations\n\nimport json\n"),
                    ),
                    append("tasklite/serialize.py", SERIALIZE_STORE),
                ),
            ),
            (
                "Add TaskStore.save and TaskStore.load\n\nCloses #5",
                files(
                    edits(
                        "tasklite/store.py",
                        (
                            "from typing import Iterable, Optional\n",
                            "from pathlib import Path\nfrom typing import Iterable, Optional\n",
                        ),
                        STORE_PERSIST,
                    ),
                    {"tests/test_persistence.py": TEST_PERSISTENCE},
                ),
            ),
        ],
    )
    b.commit(
        "ci: also test on Python 3.12",
        {".github/workflows/ci.yml": CI.replace('python-version: "3.11"', 'python-version: ["3.11", "3.12"]')},
    )
    b.commit(
        "Tidy store tests",
        {
            "tests/test_store.py": TEST_STORE.replace(
                "def test_remove_deletes_task():", "def test_remove_deletes_task_and_forgets_it():"
            )
        },
    )
    release(
        "0.2.0",
        CHANGES_020,
        ["Query", "SerializationError", "Task", "TaskStore", "normalize_tag", "task_from_dict", "task_to_dict"],
        imports_020,
    )

    # ---- due dates (#11) ------------------------------------------------------------------
    b.squash_pr(
        12,
        "Add due dates to tasks",
        files(
            edits("tasklite/models.py", MODELS_DUE_IMPORT, MODELS_DUE_FIELD, MODELS_DUE_METHOD),
            edits("tasklite/serialize.py", SERIALIZE_DUE_IMPORT, SERIALIZE_DUE_TO, SERIALIZE_DUE_FROM),
            edits("tasklite/store.py", STORE_DUE_IMPORT, STORE_DUE_ADD),
            edits("tests/test_serialize.py", ('"tags": ["a", "b"]}', '"tags": ["a", "b"], "due": None}')),
            {"tests/test_due.py": TEST_DUE},
        ),
        body="Due dates are optional and stored as ISO dates.\n\nPart of #11",
    )
    b.merge_pr(
        13,
        "overdue",
        "Find overdue and upcoming tasks",
        [
            (
                "Let queries match on due dates\n\nA query can ask for tasks due before or after a date, or overdue on a "
                "day; tasks without a due date never match those.",
                edits(
                    "tasklite/query.py",
                    QUERY_DUE_IMPORT,
                    QUERY_DUE_FIELDS,
                    QUERY_DUE_BUILD,
                    QUERY_DUE_BUILD_ARGS,
                    QUERY_DUE_MATCH,
                ),
            ),
            (
                "Add TaskStore.overdue and TaskStore.upcoming\n\nCloses #11",
                files(
                    edits("tasklite/store.py", STORE_OVERDUE_IMPORT, STORE_OVERDUE),
                    append("tests/test_due.py", TEST_DUE_QUERIES),
                ),
            ),
        ],
    )
    b.squash_pr(
        14,
        "Sort task lists by due date or title",
        files(
            edits("tasklite/query.py", QUERY_ORDER_FIELD, QUERY_ORDER_BUILD, QUERY_ORDER_BUILD_ARGS, QUERY_ORDER_APPLY),
            edits("tasklite/store.py", STORE_ORDER_LIST),
            {"tests/test_sorting.py": TEST_SORTING},
        ),
        body="Undated tasks sort last.\n\nRefs #11",
    )
    b.commit("docs: add a usage section", {"README.md": README + "\n## Usage\n\nSee the docstrings of TaskStore.\n"})
    if tags:
        b.tag("v0.3.0rc1", "tasklite 0.3.0 release candidate 1")

    # ---- exports (#15) --------------------------------------------------------------------
    names_030 = [
        "Query",
        "SerializationError",
        "Task",
        "TaskStore",
        "normalize_tag",
        "task_from_dict",
        "task_to_dict",
        "to_csv",
        "to_markdown",
    ]
    imports_030 = imports_020 + "from .export import to_csv, to_markdown\n"
    odd = {}
    if odd_files:
        odd = {
            "tasklite/locale/messages_de.py": "# -*- coding: latin-1 -*-\nDUE = 'F\xe4llig'\nDONE = 'Erledigt \xfcberall'\n".encode(
                "latin-1"
            ),
            "tasklite/data/logo.png": bytes(range(256)) * 4 + b"\x89PNG\r\n\x1a\n\0\0",
            b"tasklite/data/caf\xe9.bin": b"\0\1\2\3binary\xff\xfe",
        }
    b.merge_pr(
        16,
        "csv-export",
        "Export tasks to CSV",
        [
            ("Add CSV export", files({"tasklite/export.py": EXPORT}, odd)),
            (
                "Add TaskStore.export_csv\n\nCloses #15",
                files(
                    edits("tasklite/store.py", STORE_EXPORT),
                    init(names_030[:-1], imports_020 + "from .export import to_csv\n"),
                    {"tests/test_export.py": TEST_EXPORT},
                ),
            ),
        ],
    )
    b.squash_pr(
        17,
        "Export tasks as a Markdown checklist",
        files(
            append("tasklite/export.py", EXPORT_MD),
            init(names_030, imports_030),
            append("tests/test_export.py", TEST_EXPORT_MD),
        ),
        body="Refs #15",
    )
    release("0.3.0", CHANGES_030, names_030, imports_030)

    # ---- priorities (#18) -----------------------------------------------------------------
    names_040 = names_030 + ["Priority", "parse_priority"]
    imports_040 = imports_030 + "from .models import Priority, parse_priority\n"
    b.merge_pr(
        19,
        "priorities",
        "Task priorities",
        [
            (
                "Add a Priority to tasks\n\nPart of #18",
                files(
                    edits(
                        "tasklite/models.py", MODELS_PRIO_IMPORT, MODELS_PRIO_CLASS, MODELS_PRIO_FIELD, MODELS_PRIO_POST
                    ),
                    init(names_040, imports_040, "0.3.0"),
                ),
            ),
            (
                "Store priorities and accept them when adding tasks",
                files(
                    edits("tasklite/serialize.py", SERIALIZE_PRIO_TO, SERIALIZE_PRIO_FROM),
                    edits("tasklite/store.py", STORE_PRIO_ADD),
                    edits("tests/test_serialize.py", ('"due": None}', '"due": None, "priority": "normal"}')),
                    {"tests/test_priority.py": TEST_PRIORITY},
                ),
            ),
        ],
    )
    b.squash_pr(
        20,
        "Filter and sort by priority",
        files(
            edits(
                "tasklite/query.py",
                QUERY_PRIO_IMPORT,
                QUERY_PRIO_FIELD,
                QUERY_PRIO_BUILD,
                QUERY_PRIO_BUILD_ARGS,
                QUERY_PRIO_MATCH,
                QUERY_PRIO_SORT,
            ),
            edits("tasklite/export.py", EXPORT_PRIO, EXPORT_PRIO_ROW),
            append("tests/test_priority.py", TEST_PRIORITY_QUERIES),
            edits(
                "tests/test_export.py",
                ('"due": "2026-04-02"}', '"due": "2026-04-02", "priority": "normal"}'),
                ('"id,title,done,tags,due"\n', '"id,title,done,tags,due,priority"\n'),
                ('"id,title,done,tags,due\\n"', '"id,title,done,tags,due,priority\\n"'),
            ),
        ),
        body="CSV exports gain a priority column.\n\nCloses #18",
    )
    b.commit(
        "ci: cache pip downloads",
        {
            ".github/workflows/ci.yml": CI.replace(
                "      - run: pip install",
                "      - uses: actions/cache@v4\n        with:\n          path: ~/.cache/pip\n          key: pip\n      - run: pip install",
            )
        },
    )

    # ---- command line (#21) ---------------------------------------------------------------
    b.merge_pr(
        22,
        "cli",
        "Command-line interface",
        [
            (
                "Add the tasklite command\n\nadd, list and done over a JSON task file. Every change is also logged\n"
                "to a history in a .tasklite directory, which git ignores.\n\nPart of #21",
                files(
                    {"tasklite/cli.py": CLI, "tasklite/__main__.py": MAIN},
                    edits(".gitignore", ("*.egg-info/\n", "*.egg-info/\n.tasklite/\n")),
                ),
            ),
            (
                "Install a tasklite script and test the command",
                files(
                    edits(
                        "pyproject.toml",
                        (
                            "[project.optional-dependencies]",
                            '[project.scripts]\ntasklite = "tasklite.cli:main"\n\n[project.optional-dependencies]',
                        ),
                    ),
                    {"tests/test_cli.py": TEST_CLI},
                ),
            ),
        ],
    )
    b.squash_pr(
        23,
        "CLI: export and overdue commands",
        files(
            edits("tasklite/cli.py", CLI_MORE_IMPORT, CLI_MORE_PARSER, CLI_MORE_MAIN),
            append("tests/test_cli.py", TEST_CLI_MORE),
        ),
        body="Closes #21",
    )
    release("0.4.0", CHANGES_040, names_040, imports_040)

    # ---- tag index (#24): a refactor whose tests already pass before it --------------------
    b.merge_pr(
        25,
        "tag-index",
        "Index tasks by tag",
        [
            (
                "Add a TagIndex from tags to task ids\n\nTasks tell a listener when add_tag or remove_tag change them.\n\n"
                "Part of #24",
                files(
                    {"tasklite/index.py": INDEX},
                    edits("tasklite/models.py", MODELS_INDEX_IMPORT, MODELS_INDEX_FIELD, MODELS_INDEX_METHODS),
                ),
            ),
            (
                "Keep a tag index in TaskStore\n\nTaskStore.tags() reads the index instead of every task.",
                files(
                    edits(
                        "tasklite/store.py",
                        STORE_INDEX_IMPORT,
                        STORE_INDEX_INIT,
                        STORE_INDEX_ADD,
                        STORE_INDEX_REMOVE,
                        STORE_INDEX_TAGS,
                        STORE_INDEX_RESTORE,
                    ),
                    {"tests/test_tag_index.py": TEST_TAG_INDEX},
                ),
            ),
        ],
    )
    b.squash_pr(
        26,
        "Look up tag filters in the tag index",
        files(
            edits("tasklite/query.py", QUERY_INDEX_IMPORT, QUERY_INDEX_METHOD),
            edits("tasklite/store.py", STORE_INDEX_FILTER),
            append("tests/test_tag_index.py", TEST_TAG_INDEX_QUERIES),
        ),
        body="Only the tasks carrying the wanted tags are matched against the rest of the query.\n\nCloses #24",
    )
    release("0.5.0", CHANGES_050, names_040, imports_040)
    return dest
