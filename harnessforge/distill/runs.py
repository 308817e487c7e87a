"""One milestone run as distillation sees it: its events, the conversation they rebuild, and the
analytics rows (stuck points, hints, test progress) that point into it by event seq."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ..errors import ArtifactError
from ..harness.conversation import Conversation, rebuild
from ..harness.recorder import Recorder
from ..models.distill import Provenance
from ..models.trajectory import Event, Message
from ..store import Store

Key = tuple[str, str, str]  # repo, run_id, milestone_id


@dataclass
class RunView:
    summary: dict[str, Any]  # the milestone_summary row
    events: list[Event]
    conversation: Conversation
    provenance: Provenance
    stuck: list[dict[str, Any]] = field(default_factory=list)
    hints: list[dict[str, Any]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> Key:
        return self.provenance.repo, self.provenance.run_id, self.provenance.milestone_id

    @property
    def id(self) -> str:
        return "/".join(self.key)

    @property
    def messages(self) -> list[Message]:
        return self.conversation.messages

    def first_index_from(self, seq: int) -> int:
        """Index of the first message that came from event `seq` or later."""
        origins = self.conversation.origins
        return next((i for i, o in enumerate(origins) if o is not None and o >= seq), len(self.messages))

    def last_index_upto(self, seq: int) -> int:
        """Index just past the last message that came from event `seq` or earlier."""
        last = 0
        for i, o in enumerate(self.conversation.origins):
            if o is not None and o <= seq:
                last = i + 1
        return last

    def assistant_at(self, seq: int) -> int | None:
        """Index of the assistant message recorded as event `seq`."""
        return next((i for i, o in enumerate(self.conversation.origins) if o == seq), None)

    def turn_start_before(self, index: int) -> int:
        """The nearest assistant message at or before `index`: a cut there keeps tool calls and
        their results together."""
        while index > 2 and self.messages[index]["role"] != "assistant":
            index -= 1
        return index


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def load_runs(
    store: Store, con: duckdb.DuckDBPyConnection, rules_hash: str, log=print, only: tuple[str, str] | None = None
) -> list[RunView]:
    """Every finished milestone run in the analytics database (or only those of milestone `only`:
    (repo, milestone id)), with its events from the store. A run whose log cannot be read is skipped
    with the reason; the others go on."""
    where = ""
    if only:
        where = "WHERE repo = {} AND milestone_id = {}".format(*(_literal(v) for v in only))
    by_key: dict[str, dict[Key, list[dict]]] = {}
    for table, order in (("stuck_points", "start_seq"), ("hint_responses", "hint_seq"), ("progress_curves", "seq")):
        grouped: dict[Key, list[dict]] = defaultdict(list)
        for row in _rows(con, f"SELECT * FROM {table} {where} ORDER BY repo, run_id, milestone_id, {order}"):
            grouped[(row["repo"], row["run_id"], row["milestone_id"])].append(row)
        by_key[table] = grouped
    views = []
    for s in _rows(con, f"SELECT * FROM milestone_summary {where} ORDER BY repo, run_id, milestone_id"):
        key = (s["repo"], s["run_id"], s["milestone_id"])
        try:
            mdir = store.milestone_run(s["repo"], s["run_id"], s["milestone_id"]).dir
            events = Recorder.open(mdir, on_warning=log, repair=False).events()
        except ArtifactError as e:
            log(f"{'/'.join(key)}: not distilled: {e}")
            continue
        if not events:
            log(f"{'/'.join(key)}: not distilled: its trajectory.jsonl has no events")
            continue
        prov = Provenance(
            repo=s["repo"], run_id=s["run_id"], milestone_id=s["milestone_id"], agent=s["agent"] or "",
            model=s["model"] or "", harness_version=s["harness_version"] or "", rules_hash=rules_hash,
            synthetic=bool(s["synthetic"]),
        )  # fmt: skip
        found = [by_key[t].get(key, []) for t in ("stuck_points", "hint_responses", "progress_curves")]
        views.append(RunView(s, events, rebuild(events), prov, *found))
    return views
