"""The corpus file model, shared by the corpus benchmark's modules: an Entry (one release range of one
repository) as benchmarks/corpus.yaml writes it, load_entries and select (a bad file or option is one
CorpusError line), the result rows an entry's measurement fills, the run's Options, and one_line.

The other corpus modules import this one and none of them is imported here (benchmarks/corpus.py runs them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Log = Callable[[str], None]
LANGUAGES = ("python", "go", "typescript", "javascript", "rust")


# ---- the corpus file ------------------------------------------------------------------------------------------------
class Entry(BaseModel):
    """One release range of one repository."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    repo: str | None = Field(None, description="owner/name on GitHub: cloned when there is no local clone.")
    path: str | None = Field(None, description="A local clone; else <--root>/<name>.")
    language: Literal["python", "go", "typescript", "javascript", "rust"]
    from_ref: str = Field("default", alias="from")
    to_ref: str = Field("default", alias="to")

    @field_validator("from_ref", "to_ref", mode="before")
    @classmethod
    def _text(cls, value):
        return str(value)  # YAML reads an unquoted 1.10 as the number 1.1: keep what was written when it is quoted

    @property
    def group(self) -> str:
        return "typescript" if self.language == "javascript" else self.language


class CorpusError(Exception):
    """A corpus file or an option that cannot be used: one line, and nothing runs."""


def load_entries(path: Path) -> list[Entry]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise CorpusError(f"{path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise CorpusError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    rows = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise CorpusError(f"{path}: expected a list of entries (or `entries:` holding one)")
    entries = []
    for i, row in enumerate(rows, start=1):
        try:
            entries.append(Entry.model_validate(row))
        except ValidationError as e:
            error = e.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "entry"
            raise CorpusError(f"{path}: entry {i}: {where}: {error['msg']}") from None
    names = Counter(entry.name for entry in entries)
    if twice := sorted(name for name, count in names.items() if count > 1):
        raise CorpusError(f"{path}: entry names must be unique; repeated: {', '.join(twice)}")
    return entries


def select(entries: list[Entry], only: list[str], baseline: list[str]) -> list[Entry]:
    known = {entry.name for entry in entries}
    for option, names in (("--only", only), ("--baseline", baseline)):
        if unknown := [name for name in names if name not in known]:
            raise CorpusError(f"{option}: no entry named {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    if only and (outside := [name for name in baseline if name not in only]):
        raise CorpusError(f"--baseline {', '.join(outside)}: not selected by --only")
    return [entry for entry in entries if not only or entry.name in only]


# ---- results --------------------------------------------------------------------------------------------------------
@dataclass
class MilestoneRow:
    id: str
    title: str
    type: str | None
    title_source: str | None
    status: str = "not validated"
    reason: str | None = None
    fail_to_pass: int = 0
    candidates: int = 0
    validation_s: float | None = None
    detail: str = ""
    headlines: int = 0  # the features its title names
    headlines_untested: int = 0  # of those, the ones no graded test covers (validation: `untested_headlines`)
    coherent: bool = True  # one feature, or features sharing code (issue 31)
    expected_turns: int | None = None


@dataclass
class EntryResult:
    name: str
    language: str
    group: str
    source: str = ""
    key: str = ""
    requested: str = ""  # the range as written
    range: str = ""  # the range planned
    notes: list[str] = field(default_factory=list)
    screen_passed: bool | None = None
    screen_failed: list[str] = field(default_factory=list)
    primary_language: str | None = None
    milestones: int = 0
    type_mix: dict[str, int] = field(default_factory=dict)
    feature_titled: int = 0
    entries_citing: int = 0
    entries_covered: int = 0
    text: dict[str, int] = field(default_factory=dict)  # issue 30: entries placed, broken texts, interface named...
    acceptance: dict[str, int] = field(default_factory=dict)  # issue 31: collateral tests, headlines covered...
    validated: bool = False
    valid: int = 0
    fail_to_pass: int = 0
    not_valid: dict[str, int] = field(default_factory=dict)
    images_built: int = 0
    images_cached: int = 0
    image_build_s: float = 0.0  # the sum of our images' own build seconds (0 for a cached one)
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    errors: dict[str, str] = field(default_factory=dict)  # stage -> error line
    rows: list[MilestoneRow] = field(default_factory=list)
    baseline: dict | None = None

    @property
    def env_s(self) -> float | None:
        return self.seconds.get("env build")

    @property
    def validation_s(self) -> float | None:
        return self.seconds.get("validate")

    @property
    def per_valid_s(self) -> float | None:
        if not self.valid or self.validation_s is None:
            return None
        return ((self.env_s or 0.0) + self.validation_s) / self.valid


@dataclass
class Options:
    """How a corpus run measures: the command line's choices."""

    build: bool = True  # env build in Docker
    backend: str | None = "docker"  # the validation backend; None: no validation
    repeats: int = 3
    workers: int = 1
    collect: bool = True  # screening runs the language's collector
    fresh: bool = False  # every entry under a fresh image tag (built from scratch)
    keep_images: bool = False  # keep the images made under fresh tags
    baseline: tuple[str, ...] = ()
    baseline_milestones: int | None = None  # the first N milestones with an image; None: all
    stamp: str = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S"))


def one_line(e: BaseException) -> str:
    """An error as one line: its type and its first non-empty line (cut at 400 characters)."""
    text = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    return f"{type(e).__name__}: {text[:400]}" if text else type(e).__name__
