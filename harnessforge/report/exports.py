"""What an export holds: rows per exported file or folder, against what its dataset card states."""

from __future__ import annotations

import re
from pathlib import Path

_CARD_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \|", re.M)  # the file table: name, rows, then tokens


def export_counts(datasets: Path) -> list[tuple[str, int, int | None]]:
    """(what, rows found in the files, rows the dataset card states) per exported file or folder:
    JSON lines per .jsonl file, one per ATIF trajectory, one per Harbor task folder; and what the
    card lists but no file holds (found: 0)."""
    card_path = datasets / "README.md"
    card = {}
    if card_path.exists():
        card = card_file_counts(card_path.read_text())
    found: list[tuple[str, int, int | None]] = []
    used = set()
    for path in sorted(datasets.rglob("*.jsonl")):
        relative = path.relative_to(datasets).with_suffix("").as_posix()
        key = relative if relative in card else path.stem if path.stem in card else None
        used.add(key)
        found.append((f"{relative}.jsonl", _lines(path), card.get(key)))
    folders = {"atif": ("atif/ (ATIF trajectories)", "*/*/*.json"), "harbor_tasks": ("tasks/ (Harbor tasks)", "*/")}
    for key, (what, pattern) in folders.items():
        folder = datasets / what.split("/")[0]
        if folder.is_dir() or key in card:
            used.add(key)
            found.append((what, len(list(folder.glob(pattern))) if folder.is_dir() else 0, card.get(key)))
    found += [(f"{key} (card only)", 0, count) for key, count in card.items() if key not in used]
    return found


def card_file_counts(card: str) -> dict[str, int]:
    """The rows the dataset card's file table states, per file (its other tables are not counts of files)."""
    files = card.split("## Files", 1)[-1].split("\n## ", 1)[0]
    return {name: int(count) for name, count in _CARD_ROW.findall(files)}


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())
