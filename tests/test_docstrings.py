"""A changed source file's docstrings and doc comments quoted as documentation: where a library documents in the
code, the change's own statement of what its tests pin (tabulate's colon_grid example table) reaches the task."""

from __future__ import annotations

from harnessforge import syntax
from harnessforge.envs import docstrings
from harnessforge.envs.documentation import documented
from harnessforge.envs.milestone_interface import refresh_interface
from harnessforge.examples.builder import RepoBuilder
from harnessforge.examples.patterns.common import START
from harnessforge.files import FileClassifier
from harnessforge.gitio import GitRepo
from harnessforge.rules import load_rules
from tests.helpers import documented_change, milestone_between

TABLES = '''"""Pretty-print tabular data."""


def tabulate(rows, tablefmt="simple"):
    """Format a fixed width table for pretty printing.

    >>> print(tabulate([[1, 2]]))
    -  -
    1  2
    -  -

    "grid" draws a box around every cell.
%s
    """
    # implementation detail: the grid's header rule is drawn with "=" (colon_grid too)
    return _draw(rows, tablefmt)
'''

COLON_GRID = """
    "colon_grid" is similar to "grid" but uses colons only to define
    columnwise content alignment:

    >>> print(tabulate([["spam", 1]], ["a", "b"], "colon_grid"))

    +------+-----+
    | a    | b   |
    +:=====+:====+
    | spam | 1   |
    +------+-----+
"""


def test_a_docstring_paragraph_the_change_adds_is_quoted_with_its_example(tmp_path):
    """tabulate's "Add table format colon_grid": the release note is the whole statement, the docstring paragraph
    and its example table say what the tests pin. The paragraph and example are quoted (the example as code), the
    docstring's unchanged paragraphs and the code's comments are not."""
    builder = RepoBuilder(tmp_path / "repo", START)
    base = builder.commit("Tables", {"tables.py": TABLES % ""})
    verify = builder.commit(
        "Add colon_grid",
        {
            "tables.py": TABLES % COLON_GRID,
            "test_tables.py": "from tables import tabulate\n\ndef test_colon_grid():\n"
            "    assert tabulate([['a']], tablefmt='colon_grid') == '+---+'\n",
        },
    )
    milestone = milestone_between(
        base,
        verify,
        'Add table format "colon_grid"',
        'Add table format "colon_grid".',
        ["tables.py", "test_tables.py"],
        ["test_tables.py"],
        ["test_tables.py::test_colon_grid"],
    )
    planning = load_rules().planning
    quoted = refresh_interface(GitRepo(builder.path), milestone, FileClassifier(planning), planning)
    assert quoted.documentation == [
        "From the documentation of `tabulate`.",
        '"colon_grid" is similar to "grid" but uses colons only to define',
        "columnwise content alignment:",
        "",
        '    >>> print(tabulate([["spam", 1]], ["a", "b"], "colon_grid"))',
        "",
        "    +------+-----+",
        "    | a    | b   |",
        "    +:=====+:====+",
        "    | spam | 1   |",
        "    +------+-----+",
    ]
    task = quoted.task("hidden")
    assert "+:=====+:====+" in task and "draws a box" not in task and "implementation detail" not in task
    assert "tables.py" not in "\n".join(quoted.documentation)  # never where the solution goes


def test_a_new_definitions_own_docstring_is_quoted_past_its_first_paragraph(tmp_path):
    """A new function's docstring documents it without naming it: its first sentence is the interface line, the
    paragraphs after it are the documentation; an old function's new paragraph that names nothing the tests use is
    not quoted."""
    builder = RepoBuilder(tmp_path / "repo", START)
    old = 'def parse(text):\n    """Parse a version."""\n    return text\n'
    base = builder.commit("Versions", {"versions.py": old})
    new = (
        'def parse(text):\n    """Parse a version.\n\n    Leading spaces are an error.\n    """\n    return text\n\n\n'
        'def truncate(version, part):\n    """Drop the components lower than `part`.\n\n'
        '    ``major`` also drops the prerelease and sets minor and patch to 0.\n    """\n    return version\n'
    )
    verify = builder.commit("Add truncate", {"versions.py": new})
    repo = GitRepo(builder.path)
    found = docstrings.page("versions.py", new)
    assert found is not None and set(found.owned.values()) == {"parse", "truncate"}
    quoted = documented(repo, base, verify, ["versions.py"], {"truncate"}, ["versions.py"])
    assert quoted == [
        "From the documentation of `truncate`.",
        "`major` also drops the prerelease and sets minor and patch to 0.",
    ]
    assert documented(repo, base, verify, ["versions.py"], {"other"}, ["versions.py"]) == []


def test_go_and_javascript_doc_comments_are_pages_at_the_files_lines():
    """Doc comments right above a declaration, markers stripped, on the file's own lines; a comment inside a body
    or apart from any declaration is no documentation."""
    go = (
        "package uuid\n\n// NullUUID represents a UUID that may be null.\n//\n"
        "// An invalid NullUUID marshals to JSON as null.\ntype NullUUID struct {\n\tUUID UUID\n}\n\n"
        "func f() {\n\t// not documentation\n}\n"
    )
    page = docstrings.page("null.go", go)
    assert page is not None
    lines = page.text.split("\n")
    said = ["NullUUID represents a UUID that may be null.", "", "An invalid NullUUID marshals to JSON as null."]
    assert lines[2:5] == said
    assert "not documentation" not in page.text and len(lines) == len(go.split("\n"))
    assert page.owned == {5: "NullUUID"}
    script = "/**\n * Split a path.\n *\n * Empty segments are kept.\n */\nexport function split(path) {}\n"
    page = docstrings.page("split.js", script)
    assert page is not None and page.text.split("\n")[1:4] == ["Split a path.", "", "Empty segments are kept."]
    assert page.owned == {4: "split"}
    assert docstrings.page("data.json", "{}") is None and docstrings.page("broken.py", "def (") is None


def test_a_quoted_docstring_paragraph_names_its_definition_and_ends_before_a_trailing_comment(tmp_path):
    """python-multipart (fourteenth held-out set): "Args: name: ... content_type: ..." quoted alone read as raw
    fragments, and the closing `\"\"\"  # noqa: E501` came with it."""
    builder = RepoBuilder(tmp_path / "repo", START)
    old = 'class File:\n    def __init__(self, name):\n        """A file.\n\n        Args:\n'
    old += '            name: Its name.\n        """\n'
    base = builder.commit("Files", {"files.py": old})
    new = (
        'class File:\n    def __init__(self, name, content_type=None):\n        """A file.\n\n        Args:\n'
        "            name: Its name.\n            content_type: The value of the Content-Type header.\n"
        '        """  # noqa: E501\n'
    )
    verify = builder.commit("Content type", {"files.py": new})
    page = docstrings.page("files.py", new)
    assert page is not None and set(page.owners.values()) == {"File.__init__"} and "noqa" not in page.text
    quoted = documented(GitRepo(builder.path), base, verify, ["files.py"], {"content_type"}, [])
    assert quoted == [
        "From the documentation of `File`.",
        "Args:",
        "    name: Its name.",
        "    content_type: The value of the Content-Type header.",
    ]


def test_a_quoted_args_paragraph_names_its_own_function_among_many_and_once_for_its_docstring(tmp_path):
    """pydantic-settings (fifteenth held-out set): `run`'s "Args:" was labelled with `BaseSettings`, whose docstring
    holds the page's first "Args:" line; two paragraphs of one docstring each got the label."""
    builder = RepoBuilder(tmp_path / "repo", START)
    first = 'class BaseSettings:\n    """Settings.\n\n    Args:\n        env: The environment.\n    """\n\n\n'
    run = 'def run(model):\n    """Run a model.\n\n    Args:\n        model: The model.\n    """\n'
    base = builder.commit("Settings", {"settings.py": first + run})
    shown = run.replace("        model: The model.\n", "        model: The model.\n        show_env: Show env names.\n")
    shown = shown.replace('    """\n', '\n    With `show_env`, the help text names each variable.\n    """\n')
    verify = builder.commit("Show env", {"settings.py": first + shown})
    quoted = documented(GitRepo(builder.path), base, verify, ["settings.py"], {"show_env"}, [])
    assert quoted == [
        "From the documentation of `run`.",
        "Args:",
        "    model: The model.",
        "    show_env: Show env names.",
        "",
        "With `show_env`, the help text names each variable.",
    ]


def test_a_private_helpers_docstring_is_no_user_documentation(tmp_path):
    """pydantic-settings (fifteenth held-out set): three tasks quoted `_settings_log_debug`, `_iter_secret_files` and
    `_environ_is_case_insensitive`, a maintainer's notes the readers found orphaned. A helper the tests call is
    still quoted, and so is a constructor."""
    before = {"settings.py": "class Settings:\n    pass\n"}
    after = {
        "settings.py": 'class Settings:\n    def __init__(self, debug):\n        """Build settings; `DEBUG` logs each '
        'source."""\n\n    def _log(self):\n        """Enabled by setting `DEBUG` to a truthy value."""\n\n'
        '    def _merge(self):\n        """Merge the `DEBUG` sources."""\n'
    }
    assert documented_change(tmp_path / "a", before, after, {"DEBUG"}) == [
        "From the documentation of `Settings`.",
        "Build settings; `DEBUG` logs each source.",
    ]
    called = documented_change(tmp_path / "b", before, after, {"DEBUG", "_merge"})
    assert called[-2:] == ["From the documentation of `Settings._merge`.", "Merge the `DEBUG` sources."]


def test_one_docstring_shared_by_several_definitions_is_labelled_with_each(tmp_path):
    """tablewriter (fifteenth held-out set): the header, row and footer builders share one doc comment, and every
    quote of it was labelled `HeaderFormattingBuilder.WithMergeMode`, the first place those lines stand. Quoted
    once per definition, a reader of the eighteenth set saw a paste: once, labelled with each."""
    method = '    def with_merge(self, mode):\n        """Set the merge `mode` of the cells."""\n'
    before = {"builders.py": "class Header:\n    pass\n\n\nclass Row:\n    pass\n\n\nclass Footer:\n    pass\n"}
    after = {"builders.py": f"class Header:\n{method}\n\nclass Row:\n{method}\n\nclass Footer:\n{method}"}
    quoted = documented_change(tmp_path, before, after, {"mode"})
    assert quoted == [
        "From the documentation of `Header.with_merge`, `Row.with_merge` and `Footer.with_merge`.",
        "Set the merge `mode` of the cells.",
    ]


def test_a_go_doc_comments_tab_indented_example_stays_code(tmp_path):
    """tablewriter (fifteenth held-out set): `//\tif twdw.IsEastAsian() {` lost its tab and read as prose beside the
    comment's text. A comment's markers are its margin: what is indented past them is code."""
    go = (
        "package twdw\n\n// IsEastAsian returns the setting.\n//\n// Example:\n//\n//\tif twdw.IsEastAsian() {\n"
        "//\t\t// Handle East Asian widths\n//\t}\nfunc IsEastAsian() bool { return true }\n"
    )
    page = docstrings.page("width.go", go)
    assert page is not None
    assert page.text.split("\n")[4:9] == [
        "Example:",
        "",
        "    if twdw.IsEastAsian() {",
        "        // Handle East Asian widths",
        "    }",
    ]


def test_an_unexported_go_names_doc_comment_is_no_user_documentation(tmp_path):
    """go-pretty (sixteenth held-out set): four tasks quoted the comments of unexported helpers
    (`extractAllTrackersInOrder`, `escSeqMaxLength`) as the project's documentation."""
    after = {
        "progress.go": "package progress\n\n// SortByIndex sorts the trackers by their `Index`.\n"
        "func SortByIndex() {}\n\n// extractAll returns the trackers sorted by their `Index`.\nfunc extractAll() {}\n"
    }
    quoted = documented_change(tmp_path, {"progress.go": "package progress\n"}, after, {"Index"})
    assert quoted == ["SortByIndex sorts the trackers by their `Index`."]


def test_a_tools_directive_is_no_part_of_a_doc_comment():
    """go-pretty's `//gocyclo:ignore` was quoted as documentation, winston's `/* eslint-disable valid-jsdoc */` opened
    the doc of `getHighestLogLevel` (sixteenth held-out set), and its JSDoc `@returns` ran on into the sentence."""
    go = "package text\n\n// convert converts fast.\n//\n//gocyclo:ignore\n//nolint:funlen\nfunc Convert() {}\n"
    page = docstrings.page("convert.go", go)
    assert page is not None and "gocyclo" not in page.text and "nolint" not in page.text
    script = (
        "class Logger {\n  /* eslint-disable valid-jsdoc */\n  /**\n   * Get the highest level of a logger\n   *\n"
        "   * @returns { number | null } - The level\n   */\n  getHighestLogLevel() {}\n}\n"
    )
    found = {definition.name: definition.doc for definition in syntax.definitions("logger.js", script)}
    assert found["Logger.getHighestLogLevel"] == "Get the highest level of a logger"


def test_clicks_no_rewrap_mark_and_a_private_modules_docstring_are_no_documentation(tmp_path):
    """sqlite-utils (seventeenth held-out set): a command's help kept click's `\\b` line, and the new `_parser.py`'s
    module docstring ("This module is deliberately small") was quoted as the project's documentation."""
    command = 'def query(sql):\n    r"""Run a `sql` query.\n\n    \\b\n'
    command += '    Pass "-" as the `sql` to read it from stdin.\n    """\n'
    after = {"cli.py": command, "_parser.py": '"""Parse a `sql` schema. This module is deliberately small."""\n'}
    quoted = documented_change(tmp_path, {"cli.py": "def query():\n    pass\n"}, after, {"sql"})
    assert quoted == ["Run a `sql` query.", "", 'Pass "-" as the `sql` to read it from stdin.']
