"""JavaScript, TypeScript, Go and Rust read as syntax trees (`harnessforge/syntax.py`): definitions with their owner,
lines, signature and doc comment; tests by their whole titles; the names and strings a span of code uses."""

from harnessforge import syntax

JS = """const fs = require('fs');

/** A command. */
class Command extends EventEmitter {
  _name = '';

  // Set the help group heading.
  helpGroup(heading) {
    return this;
  }
}

function splitFlags(flags) {
  return flags.split(/[ ,|]+/);
}

const camel = (text) => text, LIMIT = 3;
Command.prototype.legacy = function (value) {};
exports.program = new Command();
module.exports = { Command };
"""


def test_javascript_definitions_are_named_by_their_owner_with_lines_signature_and_doc():
    found = {definition.name: definition for definition in syntax.definitions("lib/command.js", JS)}
    assert set(found) >= {
        "Command",
        "Command._name",
        "Command.helpGroup",
        "splitFlags",
        "camel",
        "LIMIT",
        "Command.legacy",
        "program",
    }
    method = found["Command.helpGroup"]
    assert (method.kind, method.first, method.last, method.signature, method.doc) == (
        "method",
        8,
        10,
        "helpGroup(heading)",
        "Set the help group heading.",
    )
    assert found["Command"].doc == "A command." and found["Command"].signature == "class Command extends EventEmitter"
    assert (found["camel"].kind, found["LIMIT"].kind, found["Command.legacy"].kind) == (
        "function",
        "constant",
        "method",
    )
    # a line inside a method belongs to the method, not to its whole class (two features there are not related)
    assert syntax.innermost(list(found.values()), 9).name == "Command.helpGroup"


def test_a_comment_closing_the_line_above_is_no_doc_of_the_next_member():
    # tablewriter: `Total` was documented by `io.Writer`'s comment, `Merging` by the field above's
    source = "package tw\n\ntype Counter interface {\n\tio.Writer // It must be a writer.\n\tTotal() int\n}\n\n"
    source += "type CellConfig struct {\n\tWidths CellWidth // Per-column widths\n"
    source += "\tMerging CellMerging // Merging holds the merging settings.\n"
    source += "\t// Padding pads.\n\tPadding int // ignored\n}\n"
    found = {definition.name: definition.doc for definition in syntax.definitions("tw/types.go", source)}
    assert found["Counter.Total"] == ""
    assert found["CellConfig.Merging"] == "Merging holds the merging settings."
    assert found["CellConfig.Widths"] == "Per-column widths" and found["CellConfig.Padding"] == "Padding pads."


def test_typescript_types_are_named_and_their_members_are_not():
    source = "export interface Item {\n  term: string;\n}\n"
    source += "export declare class Help {\n  width: number;\n  wrap(s: string): string;\n}\n"
    names = [definition.name for definition in syntax.definitions("typings/index.d.ts", source)]
    assert names == ["Item", "Help", "Help.width", "Help.wrap"]


def test_go_methods_are_named_by_their_receiver_and_rust_methods_by_their_impl():
    go = "package m\n\n// Handle routes.\nfunc (r *Router[T]) Handle(p string) {}\n\n"
    go += "type Router[T any] struct {\n\tname string\n}\n"
    found = {definition.name: definition for definition in syntax.definitions("m.go", go)}
    assert found["Router.Handle"].doc == "Handle routes." and found["Router.Handle"].kind == "method"
    assert found["Router"].signature == "Router[T any] struct" and "Router.name" in found
    wrapped = (
        "package m\n\nfunc Exec(\n\traw Hook,\n\tto reflect.Value,\n) (interface{}, error) {\n\treturn nil, nil\n}\n"
    )
    (exec_,) = syntax.definitions("m.go", wrapped)  # mapstructure's read `func Exec( raw Hook, ...`
    assert exec_.signature == "func Exec(raw Hook, to reflect.Value,) (interface{}, error)"
    rust = "impl<T> Foo<T> {\n    pub fn new() -> Self { Foo }\n}\nmod tests {\n    fn helper() {}\n}\n"
    kinds = {definition.name: definition.kind for definition in syntax.definitions("src/lib.rs", rust)}
    assert kinds == {"Foo.new": "method", "tests.helper": "function"}
    assert syntax.definitions("notes.txt", "anything") is None  # no grammar: the caller counts the file whole


def test_tests_are_read_with_their_whole_titles_and_suites():
    source = (
        "describe('parse', () => {\n"
        "  test('when args from \"process\" then use them', () => {\n"
        "    expect(() => program.parse()).toThrow(/^error: too many arguments/);\n"
        "  });\n"
        "  it.each([1, 2])(`takes %s`, () => {});\n"
        "});\n"
    )
    tests = syntax.tests("tests/parse.test.js", source)
    assert [(test.titles, test.first, test.last) for test in tests] == [
        (("parse", 'when args from "process" then use them'), 2, 4),
        (("parse", "takes %s"), 5, 5),
    ]
    names, strings = syntax.used("tests/parse.test.js", source, [(2, 4)])
    assert {"program", "parse", "toThrow"} <= names
    assert "error: too many arguments" in strings  # a regular expression the test matches: an exact message
    go = "package m\n\nfunc TestMain(m *testing.M) {}\n\nfunc TestParse(t *testing.T) {}\n\nfunc ExampleParse() {}\n"
    assert [test.name for test in syntax.tests("m_test.go", go)] == ["TestParse", "ExampleParse"]
    rust = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn parses() {}\n    fn helper() {}\n}\n"
    assert [test.name for test in syntax.tests("src/lib.rs", rust)] == ["parses"]


def test_a_long_signature_is_cut_after_a_parameter_with_its_brackets_closed():
    """luxon (seventeenth held-out set): `toISOTime({suppressMilliseconds = false, ..., precis` was cut mid-word."""
    options = ", ".join(f"option{n} = false" for n in range(30))
    [method] = [
        d
        for d in syntax.definitions("datetime.js", f"class DateTime {{\n  toISOTime({{{options}}} = {{}}) {{}}\n}}\n")
        if d.name == "DateTime.toISOTime"
    ]
    assert method.signature.startswith("toISOTime({option0 = false, option1 = false")
    assert method.signature.endswith(", ...})") and len(method.signature) <= 300
