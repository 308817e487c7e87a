"""What a repository's files are: tests, housekeeping ("noise": CI, packaging, docs, ...) or source, by
configurable glob rules (`planning.test_patterns`, `planning.housekeeping.files`);
and how many lines of each language a revision holds (vendored folders left out).

Shared by mining (segmentation, screening), environments (recipes, validation), the harness and the
checks, so it sits below all of them.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

from .gitio import GitRepo
from .rules import PlanningRules

LANGUAGE_EXTENSIONS = {
    "python": (".py",),
    "typescript": (".ts", ".tsx"),
    "javascript": (".js", ".jsx", ".mjs", ".cjs"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".hpp", ".cxx"),
    "ruby": (".rb",),
}
VENDORED = re.compile(r"(^|/)(node_modules|vendor|third_party|dist|build|\.venv)/")


class FileClassifier:
    """Test, noise or source, by the planning rules' globs (answers cached per path)."""

    def __init__(self, rules: PlanningRules):
        self._tests = tuple(rules.test_patterns)
        self._noise = tuple(rules.housekeeping.noise_globs)
        self._housekeeping = {kind: tuple(patterns) for kind, patterns in rules.housekeeping.files.items()}
        self._noise_subjects = [re.compile(pattern, re.I) for pattern in rules.noise_subjects]
        self.is_test = lru_cache(maxsize=None)(self._is_test)
        self.is_noise = lru_cache(maxsize=None)(self._is_noise)

    @staticmethod
    def _match(path: str, patterns: tuple[str, ...]) -> bool:
        name = path.rsplit("/", 1)[-1]
        return any(
            fnmatchcase(path, pattern) or ("/" not in pattern and fnmatchcase(name, pattern)) for pattern in patterns
        )

    def _is_test(self, path: str) -> bool:
        return self._match(path, self._tests)

    def _is_noise(self, path: str) -> bool:
        return not self.is_test(path) and self._match(path, self._noise)

    def housekeeping_type(self, path: str) -> str | None:
        """Which housekeeping a file is (`ci`, `packaging`, `docs`, ...: `planning.housekeeping.files`), or None."""
        if self.is_test(path):
            return None
        return next((kind for kind, patterns in self._housekeeping.items() if self._match(path, patterns)), None)

    def is_source(self, path: str) -> bool:
        return not self.is_test(path) and not self.is_noise(path)

    def is_noise_subject(self, subject: str) -> bool:
        return any(pattern.search(subject) for pattern in self._noise_subjects)


def language_loc(repo: GitRepo, rev: str, files: list[str]) -> dict[str, int]:
    """Lines per language at `rev`, most first (vendored folders left out): the first is the primary one."""
    counts = repo.line_counts(
        rev, [f"*{extension}" for extensions in LANGUAGE_EXTENSIONS.values() for extension in extensions]
    )
    loc: dict[str, int] = {}
    for path, lines in counts.items():
        if VENDORED.search(path):
            continue
        for language, extensions in LANGUAGE_EXTENSIONS.items():
            if path.endswith(extensions):
                loc[language] = loc.get(language, 0) + lines
    return dict(sorted(loc.items(), key=lambda item: -item[1]))
