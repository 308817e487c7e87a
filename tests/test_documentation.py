"""The user documentation a change adds, quoted in its task: the README or docs paragraphs that state what the
tests pin, whole, and nothing from changelogs, other list items or pages about unrelated names."""

from __future__ import annotations

from harnessforge.envs.documentation import blocks, is_user_documentation, naming
from harnessforge.envs.milestone_interface import refresh_interface
from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import START
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from tests.helpers import documented_change, milestone_between

README = """# semver

## Functions

* `inc(v, releaseType)`: Return the version incremented by the release type.
* `diff(v1, v2)`: Returns the difference between two versions.

## Ranges

Ranges are sets of comparators.
"""

TRUNCATE_ITEM = """* `truncate(v, releaseType)`: Return the version with components _lower_
  than `releaseType` dropped off, e.g.:
  * `major` removes build & prerelease info and sets minor & patch to 0.
  * All prerelease types remove build info only
"""


def test_a_new_functions_readme_item_is_quoted_whole_and_alone(tmp_path):
    """node-semver's "Add `truncate` function": the release note is the title, the README item states what the
    tests pin. The task quotes that item with its sub-bullets, not the list's other items, the changelog or a
    page about another name."""
    builder = RepoBuilder(tmp_path / "repo", START)
    base = builder.commit(
        "Functions",
        {
            "README.md": README,
            "CHANGELOG.md": "# Changelog\n",
            "docs/ranges.md": "# Ranges\n",
            "functions/inc.js": "module.exports = () => null\n",
        },
    )
    verify = builder.commit(
        "Add truncate",
        {
            "README.md": README.replace("\n## Ranges", TRUNCATE_ITEM + "\n## Ranges"),
            "CHANGELOG.md": "# Changelog\n\n* Add `truncate` function\n",
            "docs/ranges.md": "# Ranges\n\nA `Range` holds `comparators`.\n",
            "functions/truncate.js": "const truncate = (version, truncation) => null\nmodule.exports = truncate\n",
            "test/truncate.js": (
                "const truncate = require('../functions/truncate')\ntest('x', () => truncate('1.2.3', 'major'))\n"
            ),
        },
    )
    changed = ["CHANGELOG.md", "README.md", "docs/ranges.md", "functions/truncate.js", "test/truncate.js"]
    title = "Add `truncate` function"
    milestone = milestone_between(
        base, verify, title, f"{title}.", changed, ["test/truncate.js"], ["test/truncate.js > x"]
    )
    planning = load_rules().planning
    classify = FileClassifier(planning)
    repo = GitRepo(builder.path)
    quoted = refresh_interface(repo, milestone, classify, planning)
    assert "truncate" in {item.short for item in quoted.interface}
    assert quoted.documentation == TRUNCATE_ITEM.rstrip("\n").split("\n")
    task = quoted.task("hidden")
    assert "## Documentation" in task and "All prerelease types remove build info only" in task
    assert "difference between two versions" not in task and "comparators" not in task
    assert quoted.held_back == []  # the title and the documentation state it
    for lines in (0, 3):  # no room for the whole item: none of it; its declaration still says what to write
        bare = refresh_interface(repo, milestone, classify, planning.model_copy(update={"documentation_lines": lines}))
        assert bare.documentation == [] and bare.held_back == []
    untyped = planning.model_copy(update={"documentation_lines": 0, "min_statement_words": 20})
    terse = refresh_interface(repo, milestone, classify, untyped)
    assert terse.held_back == ["terse: its statement has 12 words (planning.min_statement_words: 20)"]
    assert not terse.model_copy(update={"status": "valid"}).is_task
    assert quoted.model_copy(update={"status": "valid"}).is_task
    assert refresh_interface(repo, milestone, classify).held_back == []  # no rules: nothing is judged


def test_a_quoted_paragraph_brings_the_example_its_colon_introduces():
    """cobra's completions page: the paragraph naming the new method ends "...to `NoFileComp`:" and its code
    block follows, whole; a code block that only changed (an example edited to a new type) is not quoted."""
    page = (
        "# Completions\n\nOld text about `ValidArgs`.\n\n"
        "You can change the default for a command with `SetDefaultShellCompDirective`:\n\n"
        "```go\ncmd.CompletionOptions.SetDefaultShellCompDirective(NoFileComp)\n```\n\n"
        "```go\nfunc f() {\n\tvar comps []Completion\n\treturn comps\n}\n```\n"
    )
    lines = page.split("\n")
    added = {lines.index(line) + 1 for line in lines if "SetDefault" in line or "var comps" in line}
    found = naming(page, added, {"SetDefaultShellCompDirective", "Completion"}, set())
    assert found == [
        ["You can change the default for a command with `SetDefaultShellCompDirective`:"],
        ["```go", "cmd.CompletionOptions.SetDefaultShellCompDirective(NoFileComp)", "```"],
    ]  # the edited example naming `Completion` is no statement: a code block comes only with its prose
    assert naming(page, added, {"Completion"}, set()) == []
    assert naming(page, added, {"SetDefaultShellCompDirective"}, {"completions.go"}) == found
    assert naming(page.replace("with `Set", "in completions.go with `Set"), added, {"Set"}, {"completions.go"}) == []
    assert blocks("a\nb\n\n```\nx\n\ny\n```\nc\n") == [(1, 2), (4, 8), (9, 9)]


def test_a_paragraph_about_the_example_above_it_comes_with_the_example():
    """sprig's `all`/`any` docs: "The above returns `false`." was quoted alone, after nothing."""
    page = (
        '# Conditions\n\n## any\n\n```\nany "foo" "" 0\n```\n\n'
        "The above returns `true`; `any` is true when one argument is not empty.\n"
    )
    lines = page.split("\n")
    added = set(range(3, len(lines) + 1))
    assert naming(page, added, {"any"}, set()) == [
        ["```", 'any "foo" "" 0', "```"],
        ["The above returns `true`; `any` is true when one argument is not empty."],
    ]


def test_an_indented_code_block_is_no_statement_alone():
    """responses' README: the asserts closing a reST code block were quoted under an unrelated paragraph, without
    the setup above them and without a fence."""
    page = (
        "Calls\n-----\n\n`Request` object has `calls` list.\n\n.. code-block:: python\n\n"
        "    rsp = responses.get(url)\n\n    assert rsp.call_count == 1\n"
    )
    lines = page.split("\n")
    added = {lines.index(line) + 1 for line in lines if "call" in line}
    assert naming(page, added, {"call_count", "calls"}, set()) == [["`Request` object has `calls` list."]]


def test_only_pages_users_read_are_documentation():
    assert is_user_documentation("README.md") and is_user_documentation("site/content/completions/_index.md")
    assert is_user_documentation("docs/usage.rst")
    for path in ("CHANGELOG.md", "docs/changelog.rst", "SECURITY.md", ".github/pull_request_template.md"):
        assert not is_user_documentation(path), path
    assert not is_user_documentation("requirements.txt") and not is_user_documentation("doc/md_docs.go")


def test_a_grab_bag_is_held_back_and_a_context_line_is_no_statement():
    from harnessforge.models.task import CONTEXT_LEAD, TaskPart, held_back, statement_words

    parts = [TaskPart(heading=f"Fix {number}", tested=True) for number in range(7)]
    described = "Seven fixes to the parser, each with its own test, asked at once."
    assert held_back(described, [], parts, 8, 6) == ["grab_bag: it asks for 7 features (planning.max_asked_parts: 6)"]
    assert held_back(described, [], parts[:6], 8, 6) == [] and held_back(described, [], parts, 8, 0) == []
    text = f"Float is not a sequence.\n\n{CONTEXT_LEAD} Bump the version.\n\nThis shipped in release 0.15.1."
    assert statement_words(text, []) == 5 and held_back(text, [], [], 8, 6)[0].startswith("terse: its statement has 5")


def test_a_paragraph_said_before_in_other_markup_is_not_quoted(tmp_path):
    """loguru converted README.rst to README.md in the change: every paragraph was "added" and quoted, none new."""
    from harnessforge.envs.documentation import documented

    builder = RepoBuilder(tmp_path / "repo", START)
    old = "Logging\n=======\n\nThe ``level`` argument of ``add()`` drops the messages below it.\n"
    base = builder.commit("Docs", {"README.rst": old})
    new = (
        "# Logging\n\nThe `level` argument of `add()` drops the messages below it.\n\n"
        "A `level` may also be a callable returning whether to keep a record.\n"
    )
    verify = builder.commit("README in Markdown", {"README.md": new, "README.rst": None})
    quoted = documented(GitRepo(builder.path), base, verify, ["README.md", "README.rst"], {"level"}, [])
    assert quoted == ["A `level` may also be a callable returning whether to keep a record."]
    linked = (
        "Combine |bind|_ and ``level``::\n\n    logger.bind(a=1)\n\n"
        ".. |bind| replace:: ``bind()``\n.. _bind: https://x.io/api#bind\n"
    )
    base = builder.commit("Linked", {"README.md": None, "README.rst": linked})
    markdown = (
        "Combine [`bind()`](https://x.io/api#bind) and `level`:\n\n```python\nlogger.bind(a=1)\n```\n\n"
        "A new `level` rule:\n\n"
        "```python\nlogger.add(sink, level=lambda record: True)\n```\n"
    )
    verify = builder.commit("Markdown", {"README.md": markdown, "README.rst": None})
    repo = GitRepo(builder.path)
    assert documented(repo, base, verify, ["README.md", "README.rst"], {"level"}, []) == [
        "A new `level` rule:",  # the link's target is no word: the first paragraph was said before
        "",
        "```python",
        "logger.add(sink, level=lambda record: True)",
        "```",
    ]
    assert (
        documented(repo, base, verify, ["README.md", "README.rst"], {"level"}, [], max_lines=3) == []
    )  # no lone lead-in
    # log (eighteenth set): `Logger.WithGroup` and `handler.WithGroup` share a doc comment, quoted twice
    comment = "// WithGroup returns a new Handler with the given group name.\n"
    go = f"package log\n\n{comment}func (l *Logger) WithGroup(n string) {{}}\n\n"
    go += f"{comment}func (h *Handler) WithGroup(n string) {{}}\n"
    verify = builder.commit("Groups", {"logger.go": go})
    assert documented(repo, base, verify, ["logger.go"], {"WithGroup"}, []) == [
        "WithGroup returns a new Handler with the given group name."
    ]


def test_a_markdown_link_into_the_site_is_quoted_as_its_words(tmp_path):
    """pydantic-settings m16: "raises a [`SettingsError`](../api/pydantic_settings.md#...)": the Dev reads the quote,
    not the site. A web link stays; code in a fence is not touched."""
    page = (
        "# Settings\n\nA bad `numbers` value raises a [`SettingsError`](../api/settings.md#SettingsError); see "
        "[parsing](#parsing) or [the spec](https://json.org), like this:\n\n```py\nnumbers = values[0](raw)\n```\n"
    )
    assert documented_change(tmp_path, {"docs/index.md": "# Settings\n"}, {"docs/index.md": page}, {"numbers"}) == [
        "A bad `numbers` value raises a `SettingsError`; see parsing or [the spec](https://json.org), like this:",
        "",
        "```py",
        "numbers = values[0](raw)",
        "```",
    ]


def test_a_rest_literal_block_is_quoted_whole_after_its_lead_in():
    """loguru's troubleshooting page: "For example::" and a literal block with blank lines inside it was cut after
    its first paragraph ("import sys / from loguru import logger")."""
    page = (
        "Use a `filter` to avoid recursive calls. For example::\n\n    import sys\n    from loguru import logger\n\n"
        "    def filter(record):\n        return True\n\nAnother paragraph.\n"
    )
    assert naming(page, {1}, {"filter"}, set()) == [
        ["Use a `filter` to avoid recursive calls. For example::"],
        ["    import sys", "    from loguru import logger"],
        ["    def filter(record):", "        return True"],
    ]


def test_a_rest_page_is_quoted_as_the_task_shows_markup():
    """pytest-mock's docs quoted "Uses `tee <https://...>`__)" raw, loguru's "argument of |add|"."""
    from harnessforge.envs.documentation import plain_rest

    assert plain_rest("* ``spy_return_iter``: Uses `tee <https://docs.python.org/3/x.html#tee>`__ to copy it.") == (
        "* `spy_return_iter`: Uses tee to copy it."
    )
    assert plain_rest("The ``level`` of |add| and :meth:`Logger.bind`, see `Sphinx`_. For example::") == (
        "The `level` of `add` and `Logger.bind`, see Sphinx. For example:"
    )
    # platformdirs' api.rst (the ninth held-out set showed both raw): a :ref: with escaped literals, autodoc
    assert plain_rest("See also: :ref:`platforms:\\`\\`user_projects_dir\\`\\``") == "See also: `user_projects_dir`"
    assert plain_rest(".. autofunction:: platformdirs.user_projects_dir") == "`platformdirs.user_projects_dir`:"
    assert plain_rest("See :ref:`the platforms <platforms>` page.") == "See the platforms page."
    # stamina (eighteenth set): `.. versionadded:: 25.2.0` quoted raw, `.. note::` cut to `.. note:`
    assert plain_rest(".. versionadded:: 25.2.0") == "Added in version 25.2.0:"
    assert plain_rest("  .. deprecated:: 2.0 Use ``other``.") == "  Deprecated since version 2.0: Use `other`."
    assert plain_rest(".. note::") == "Note:" and plain_rest(".. seealso:: :func:`load`") == "See also: `load`"
    assert plain_rest(".. code-block:: python") == ""  # the code under it stays, indented
    assert plain_rest(".. doctest::") == ""  # bidict's doctest blocks (nineteenth set) read `.. doctest:`


def test_a_colon_leads_into_its_whole_list():
    """pytest-mock's docs: "spy objects contain four extra attributes:" was quoted with the first of its four."""
    page = (
        "# Spy\n\nThe `spy` objects contain four extra attributes:\n\n"
        "* ``spy_return``: the last value returned.\n* ``spy_return_list``: every value returned.\n"
        "* ``spy_return_iter``: a copy of the returned iterator.\n* ``spy_exception``: the last exception raised.\n\n"
        "Unrelated paragraph about `spy`.\n"
    )
    added = {3}
    assert naming(page, added, {"spy"}, set()) == [
        ["The `spy` objects contain four extra attributes:"],
        ["* ``spy_return``: the last value returned."],
        ["* ``spy_return_list``: every value returned."],
        ["* ``spy_return_iter``: a copy of the returned iterator."],
        ["* ``spy_exception``: the last exception raised."],
    ]


def test_a_task_asking_only_for_work_that_keeps_behaviour_is_held_back():
    """lo's "Preallocate seen map capacity." was graded by tests pinning a new `Intersect` result: a speed-up or a
    refactor keeps behaviour, so a test failing before it checks what no text says."""
    from harnessforge.models.task import TaskPart, held_back

    described = "Preallocate the seen map with the collection's length, so Intersect allocates once per call."
    speed = TaskPart(heading="Preallocate seen map capacity", tested=True, kind="performance")
    tidy = TaskPart(heading="Split the reader", tested=True, kind="refactor")
    assert held_back(described, [], [speed, tidy], 8, 6, ["performance", "refactor"]) == [
        "unstated: it asks only for performance and refactor work, which keeps behaviour, yet its tests fail before it"
    ]
    fix = TaskPart(heading="Fix Intersect with one list", tested=True, kind="bug fix")
    assert held_back(described, [], [speed, fix], 8, 6, ["performance", "refactor"]) == []
    assert held_back(described, [], [speed], 8, 6, []) == []  # the rule is off
    words = load_rules().planning.behaviour_change_words
    revert = TaskPart(
        heading="Improve SamplesBy performance and revert non-panic behavior", tested=True, kind="refactor"
    )
    assert held_back(described, [], [revert], 8, 6, ["refactor"], 0, words) == []  # its name says a change
    assert held_back(described, [], [speed], 8, 6, ["performance"], 0, words) != []
    assert held_back(described, [], [speed.model_copy(update={"kind": None})], 8, 6, ["performance"]) == []
    quiet = [
        TaskPart(heading="Default `quiet` to true", tested=True, kind="feature", releases=["16.6.0", "16.6.1"]),
        TaskPart(heading="`quiet: false` default", tested=True, kind="feature", releases=["17.0.0"]),
    ]
    assert held_back(described, [], quiet, 8, 6, [], 2) == [
        "spans_releases: its work shipped in 3 releases (planning.max_task_releases: 2)"
    ]
    assert held_back(described, [], quiet[:1], 8, 6, [], 2) == [] and held_back(described, [], quiet, 8, 6, [], 0) == []


def test_a_task_whose_asked_work_no_graded_test_covers_is_held_back():
    # planning.hold_back_ungraded: validation flagged it weak_acceptance (its tests check another change)
    from harnessforge.models.task import held_back

    described = "Remove the brotli support check: every supported Node has brotli, so the check always passed."
    assert held_back(described, [], [], 8, 6, ungraded=True) == [
        "ungraded: no test it is graded by covers the work it asks for (flag weak_acceptance)"
    ]
    assert held_back(described, [], [], 8, 6, ungraded=False) == []


def test_a_one_word_commit_subject_is_no_context():
    """lo m27: "Also in this change, not graded and not part of this task: Oops." named a commit subject."""
    from harnessforge.models.task import CONTEXT_LEAD, TaskPart, compose

    parts = [
        TaskPart(heading="Reset the counter per iteration in it.Replace", tested=True, graded=True),
        TaskPart(heading="Oops.", graded=False),
        TaskPart(heading="Refactor the sequence helpers", graded=False),
    ]
    (context,) = [line for line in compose(parts, None).description.splitlines() if line.startswith(CONTEXT_LEAD)]
    assert context == f"{CONTEXT_LEAD} Refactor the sequence helpers."


def test_front_matter_headings_alone_link_lists_and_test_data_say_nothing():
    """lo's docs pages open with YAML front matter and a table of contents of links; loguru's test outputs are .txt
    files; loguru's README introduces its example with "::" and the example itself did not change."""
    page = (
        "---\nname: TakeWhile\nsignatures:\n  - func TakeWhile(collection Slice) Slice\n---\n\n"
        "- [TakeWhile](#takewhile)\n\n### TakeWhile\n\n"
        "TakeWhile returns the leading elements of `collection` while the predicate holds::\n\n"
        "    lo.TakeWhile([]int{1, 2, 3}, even)\n"
    )
    lines = page.split("\n")
    added = {number for number, line in enumerate(lines, 1) if "TakeWhile" in line}
    assert naming(page, added, {"TakeWhile"}, set()) == [
        ["TakeWhile returns the leading elements of `collection` while the predicate holds::"],
        ["    lo.TakeWhile([]int{1, 2, 3}, even)"],
    ]
    assert not is_user_documentation("tests/exceptions/output/others/one_liner_recursion.txt")
    assert is_user_documentation("README.txt") and is_user_documentation("docs/usage.txt")


def test_tests_expecting_messages_no_text_gives_hold_the_task_back(tmp_path):
    """validator's "Add Thai translations": its tests expect 133 Thai messages that only the new translations file
    holds, as templates; no statement of the task gives them, so no Dev could pass it as written."""
    builder = RepoBuilder(tmp_path / "repo", START)
    base = builder.commit("Messages", {"words.py": "WORDS = {}\n", "test_words.py": "def test_none():\n    pass\n"})
    words = ["longer", "shorter", "wider", "narrower", "heavier", "lighter", "taller"]
    templates = {word: "{0} must be " + word + " than {1}" for word in words}
    verify = builder.commit(
        "Translations",
        {
            "words.py": f"WORDS = {templates!r}\n\n\ndef say(key, name, value):\n"
            "    return WORDS[key].format(name, value)\n",
            "test_words.py": "from words import say\n\n\ndef test_words():\n"
            + "".join(f"    assert say({word!r}, 'Name', 5) == 'Name must be {word} than 5'\n" for word in words),
        },
    )
    changed, description = ["test_words.py", "words.py"], "Add the comparison messages, one per rule."
    milestone = milestone_between(
        base, verify, "Add comparisons", description, changed, changed[:1], ["test_words.py::test_words"]
    )
    planning = load_rules().planning.model_copy(update={"assertion_examples": 0, "new_value_examples": 0})
    repo, classify = GitRepo(builder.path), FileClassifier(planning)
    held = refresh_interface(repo, milestone, classify, planning).held_back
    assert held == [
        "unstated_values: its tests expect 7 messages the task does not give (planning.max_unstated_values: 5)"
    ]
    quoting = planning.model_copy(update={"new_value_examples": 8})  # the criteria quote them all: stated
    assert refresh_interface(repo, milestone, classify, quoting).held_back == []
