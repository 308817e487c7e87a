"""The names a diff defines: def/class/func/fn/function/struct/interface/type lines it adds, per language.

Regular expressions on added lines, not parsers: a memory needs the names the Dev introduced or
rewrote, and a line that is not quite a declaration costs one wrong name, never a crash.
"""

from __future__ import annotations

import re

from ..diffs import FileDiff, parse_text
from ..files import LANGUAGE_EXTENSIONS

_VISIBILITY = r"(?:pub(?:\([^)]*\))?\s+)?"
_JS_PREFIX = r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?"
_JS_METHOD_MODIFIERS = r"(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*"
_JAVA_MODIFIERS = r"^\s*(?:(?:public|private|protected|static|final|abstract|sealed|synchronized|default)\s+)"
_JS = [
    _JS_PREFIX + r"(?:async\s+)?function\s*\*?\s*(\w+)",
    _JS_PREFIX + r"(?:abstract\s+)?class\s+(\w+)",
    _JS_PREFIX + r"(?:interface|enum)\s+(\w+)",
    _JS_PREFIX + r"type\s+(\w+)\s*(?:<[^=]*>)?\s*=",
    _JS_PREFIX + r"(?:const|let|var)\s+(\w+)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)[^=]*=>|\w+\s*=>)",
    r"^\s+" + _JS_METHOD_MODIFIERS + r"(\w+)\s*(?:<[^>]*>)?\([^)]*\)\s*(?::\s*[^{;]+)?\{\s*$",
]
PATTERNS: dict[str, list[str]] = {
    "python": [r"^\s*(?:async\s+)?def\s+(\w+)", r"^\s*class\s+(\w+)"],
    "go": [r"^func\s+(?:\([^)]*\)\s*)?(\w+)", r"^\s*type\s+(\w+)\b", r"^\s+(\w+)\s+(?:struct|interface)\s*\{"],
    "rust": [
        r"^\s*" + _VISIBILITY + r"(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)",
        r"^\s*" + _VISIBILITY + r"(?:struct|enum|trait|type|union)\s+(\w+)",
    ],
    "typescript": _JS,
    "javascript": _JS,
    "java": [
        _JAVA_MODIFIERS + r"*(?:class|interface|enum|record)\s+(\w+)",
        _JAVA_MODIFIERS + r"+[\w<>\[\], ?]+\s+(\w+)\s*\(",
    ],
    "c": [r"^\s*(?:typedef\s+)?(?:struct|union|enum)\s+(\w+)\s*\{", r"^(?:[A-Za-z_]\w*[\s*]+)+(\w+)\s*\([^;]*$"],
    "cpp": [
        r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct|union|enum(?:\s+class)?)\s+(\w+)\s*(?::[^{]*)?\{",
        r"^(?:[A-Za-z_][\w:<>,]*[\s*&]+)+(?:\w+::)*(\w+)\s*\([^;]*$",
    ],
    "ruby": [r"^\s*def\s+(?:self\.)?(\w+[?!=]?)", r"^\s*(?:class|module)\s+(\w+)"],
}
# words the loose patterns (JS methods, C functions) would take for a name
KEYWORDS = frozenset(
    "if else for while switch catch return function do try new delete sizeof typeof await yield case throw".split()
)
_COMPILED = {language: [re.compile(pattern) for pattern in patterns] for language, patterns in PATTERNS.items()}


def language_of(path: str) -> str | None:
    """The language of a path by its extension (the table `files.LANGUAGE_EXTENSIONS` keeps)."""
    for language, extensions in LANGUAGE_EXTENSIONS.items():
        if path.endswith(extensions):
            return language
    return None


def symbols_in(path: str, lines: list[str]) -> list[str]:
    """The names declared on `lines` of a file at `path`, in order, each once."""
    patterns = _COMPILED.get(language_of(path) or "", [])
    names: list[str] = []
    for line in lines:
        for pattern in patterns:
            match = pattern.match(line)
            if match and match.group(1) not in KEYWORDS and match.group(1) not in names:
                names.append(match.group(1))
                break
    return names


def changed_lines(file_diff: FileDiff) -> tuple[list[str], list[str]]:
    """(added, removed) lines of one file's diff section, without their +/- marks (binary: none)."""
    if file_diff.binary:
        return [], []
    added: list[str] = []
    removed: list[str] = []
    for patched in parse_text([file_diff]):
        for hunk in patched:
            for line in hunk:
                if line.is_added:
                    added.append(line.value.rstrip("\n"))
                elif line.is_removed:
                    removed.append(line.value.rstrip("\n"))
    return added, removed
