"""Which files are tests and which are housekeeping ("noise"), by configurable glob rules."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

from ..rules import PlanningRules


class FileClassifier:
    def __init__(self, rules: PlanningRules):
        self._tests = tuple(rules.test_patterns)
        self._noise = tuple(rules.noise_patterns)
        self._noise_subjects = [re.compile(p, re.I) for p in rules.noise_subjects]
        self.is_test = lru_cache(maxsize=None)(self._is_test)
        self.is_noise = lru_cache(maxsize=None)(self._is_noise)

    @staticmethod
    def _match(path: str, patterns: tuple[str, ...]) -> bool:
        name = path.rsplit("/", 1)[-1]
        return any(fnmatchcase(path, p) or ("/" not in p and fnmatchcase(name, p)) for p in patterns)

    def _is_test(self, path: str) -> bool:
        return self._match(path, self._tests)

    def _is_noise(self, path: str) -> bool:
        return not self.is_test(path) and self._match(path, self._noise)

    def is_source(self, path: str) -> bool:
        return not self.is_test(path) and not self.is_noise(path)

    def is_noise_subject(self, subject: str) -> bool:
        return any(p.search(subject) for p in self._noise_subjects)
