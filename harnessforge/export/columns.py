"""Every exported column's one type, declared here rather than guessed from the rows, and the writer
of each file (JSON lines + Parquet).

A type guessed from the first non-null value made `hint_level` a string in `sft` (all null) and an
int64 in `stuck_slices`, so `datasets.concatenate_datasets` refused the pair. Declared, a column has
the same type in every file; the one exception is `tools`, which ms-swift documents as a JSON
string and TRL as a list of objects. Conversations are lists of `datasets.Json` values (messages
differ in their keys, tool arguments in their shape), which Parquet readers need datasets >= 4.7 for.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..atomic import atomic_file, atomic_write

STRING, BOOL, INT = "string", "bool", "int64"
CONVERSATION = "conversation"  # a list of messages (or of tool schemas): List(Json())
COLUMNS: dict[str, str] = {
    # provenance, every file
    "id": STRING,
    "repo": STRING,
    "run_id": STRING,
    "milestone_id": STRING,
    "model": STRING,
    "synthetic": BOOL,
    "rules_hash": STRING,
    "mode": STRING,
    "harness_profile": STRING,
    "test_visibility": STRING,
    "plan_id": STRING,
    "scaffold": STRING,
    "scaffold_version": STRING,
    "split": STRING,
    "repo_created_at": STRING,
    "base_commit_date": STRING,
    "verify_commit_date": STRING,
    "model_cutoff": STRING,
    "contamination_risk": STRING,
    # segments (sft, stuck_slices) and pairs (dpo)
    "kind": STRING,
    "resolution": STRING,
    "hint_level": INT,
    "pair_type": STRING,
    "depends_on_hint": BOOL,
    # what trainers read
    "label": BOOL,
    "prompt": CONVERSATION,
    "completion": CONVERSATION,
    "chosen": CONVERSATION,
    "rejected": CONVERSATION,
    "input": CONVERSATION,
    "output": CONVERSATION,
    "chosen_output": CONVERSATION,
    "rejected_output": CONVERSATION,
    "messages": CONVERSATION,
    "rejected_messages": CONVERSATION,
    "tools": CONVERSATION,
}
DIALECT_COLUMNS: dict[str, dict[str, str]] = {"swift": {"tools": STRING}}  # ms-swift: `tools` is a JSON string


def column_type(dialect: str, column: str) -> str:
    try:
        return DIALECT_COLUMNS.get(dialect, {}).get(column) or COLUMNS[column]
    except KeyError:
        raise ValueError(f"export column {column!r} has no declared type: add it to export/columns.py") from None


def features(dialect: str, columns: list[str]):
    """The `datasets.Features` of a file of `dialect` with these columns."""
    from datasets import Features, Json, List, Value

    def feature(kind: str):
        return List(Json()) if kind == CONVERSATION else Value(kind)

    return Features({column: feature(column_type(dialect, column)) for column in columns})


def write(report, directory: Path, dialect: str, rows: list[dict[str, Any]], tokens=None) -> None:
    """`<dialect>.jsonl` and `<dialect>.parquet` under `directory`, counted in the report (rows,
    tokens, KTO labels)."""
    import datasets

    datasets.disable_progress_bars()  # stderr is for warnings and errors, one line each
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{directory.relative_to(report.out)}/{dialect}"  # e.g. sft/trl, heldout/sft/trl
    jsonl = directory / f"{dialect}.jsonl"
    atomic_write(jsonl, b"".join(json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows))
    report.files.append(jsonl)
    report.rows[name] = len(rows)
    if rows and "label" in rows[0]:
        report.labels[name] = Counter(bool(row["label"]) for row in rows)
    if tokens is not None:
        report.tokens[name] = tokens.count(rows)
    if rows:
        parquet = directory / f"{dialect}.parquet"
        with atomic_file(parquet) as partial:  # never half a Parquet file under the dataset's name
            table = datasets.Dataset.from_list(rows, features=features(dialect, list(rows[0])))
            table.to_parquet(str(partial))
        report.files.append(parquet)
