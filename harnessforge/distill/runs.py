"""One milestone run as distillation sees it: its events, the conversation they rebuild, and the
analytics rows (stuck points, hints, test progress) that point into it by event seq."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import cached_property

import duckdb

from ..analytics.rows import (
    CheatingFlagRow,
    HintResponseRow,
    MilestoneSummaryRow,
    ProgressCurveRow,
    Row,
    RunKey,
    StuckPointRow,
    read_rows,
)
from ..errors import ArtifactError
from ..harness.conversation import Conversation, rebuild
from ..harness.recorder import Recorder
from ..models.distill import RunProvenance
from ..models.trajectory import Event, Message
from ..store import Store

KEY = ("repo", "run_id", "milestone_id")
# The analytics tables one milestone's cut reads: `load_runs` below, and `checks.unreviewed_cheating` on
# its reviews (the Dagster distilled assets depend on exactly these models).
ANALYTICS_READ = tuple(
    row.table for row in (MilestoneSummaryRow, StuckPointRow, HintResponseRow, ProgressCurveRow, CheatingFlagRow)
)


@dataclass
class RunView:
    summary: MilestoneSummaryRow
    events: list[Event]
    conversation: Conversation
    provenance: RunProvenance
    stuck: list[StuckPointRow] = field(default_factory=list)
    hints: list[HintResponseRow] = field(default_factory=list)
    progress: list[ProgressCurveRow] = field(default_factory=list)

    @property
    def key(self) -> RunKey:
        return self.provenance.repo, self.provenance.run_id, self.provenance.milestone_id

    @property
    def id(self) -> str:
        return "/".join(self.key)

    @property
    def messages(self) -> list[Message]:
        return self.conversation.messages

    @cached_property
    def compactions(self) -> list[int]:
        """The seqs of the run's `compaction` events: where the model's view stopped only growing."""
        return [event.seq for event in self.events if event.action.type == "compaction"]

    @cached_property
    def whole(self) -> RunView:
        """The run with every turn whole (compactions not applied): where rows find their turns."""
        return replace(self, conversation=rebuild(self.events, compactions=False)) if self.compactions else self

    def at(self, seq: int) -> RunView:
        """The run as the model saw it at event `seq`: no compaction after it applied (messages after `seq` may
        follow: cut by index). Between compactions the conversation only grows, so each request of a turn up to
        `seq` is a prefix of this view."""
        if not any(compaction > seq for compaction in self.compactions):
            return self
        return replace(self, conversation=rebuild([event for event in self.events if event.seq <= seq]))

    def seen(self, first: int, last: int) -> list[tuple[list[Message], int]]:
        """The Dev turns of events `first`..`last` as the model saw them: per stretch between compactions, the
        conversation up to the stretch's last event and the index of its first turn there (one stretch when nothing
        was compacted). Each turn of a stretch read a prefix of it, so a row trained from that index is what the
        model saw."""
        cuts = [seq for seq in self.compactions if first < seq <= last]
        stretches = []
        for begin, end in zip([first, *cuts], [*(cut - 1 for cut in cuts), last], strict=True):
            view = self.at(end)
            start = view.first_turn_from(begin)
            messages = view.messages[: view.last_index_upto(end)]
            if start < len(messages):
                stretches.append((messages, start))
        return stretches

    def first_turn_from(self, seq: int) -> int:
        """Index of the first assistant message recorded at event `seq` or later (a summary's kept turns are
        older), else the end."""
        turns = zip(self.messages, self.conversation.origins, strict=True)
        found = (
            i for i, (message, origin) in enumerate(turns) if message["role"] == "assistant" and (origin or -1) >= seq
        )
        return next(found, len(self.messages))

    @property
    def edit_seqs(self) -> list[int]:
        """The Dev's edits (`harness.tools.is_edit`: a call that changed a file that is not a test, whatever the
        tool): the events where the recorded count of edits goes up."""
        seqs, before = [], 0
        for event in self.events:
            if event.cumulative_edits > before and event.role == "dev":
                seqs.append(event.seq)
            before = max(before, event.cumulative_edits)
        return seqs

    def first_index_from(self, seq: int) -> int:
        """Index of the first message that came from event `seq` or later."""
        origins = self.conversation.origins
        found = (index for index, origin in enumerate(origins) if origin is not None and origin >= seq)
        return next(found, len(self.messages))

    def last_index_upto(self, seq: int) -> int:
        """Index just past the last message that came from event `seq` or earlier."""
        last = 0
        for index, origin in enumerate(self.conversation.origins):
            if origin is not None and origin <= seq:
                last = index + 1
        return last

    def assistant_at(self, seq: int) -> int | None:
        """Index of the assistant message recorded as event `seq`."""
        return next((index for index, origin in enumerate(self.conversation.origins) if origin == seq), None)

    def turn_start_before(self, index: int) -> int:
        """The nearest assistant message at or before `index`: a cut there keeps tool calls and
        their results together."""
        while index > 2 and self.messages[index]["role"] != "assistant":
            index -= 1
        return index


def load_runs(
    store: Store, con: duckdb.DuckDBPyConnection, rules_hash: str, log=print, only: tuple[str, str] | None = None
) -> list[RunView]:
    """Every finished milestone run in the analytics database (or only those of milestone `only`:
    (repo, milestone id)), with its events from the store. A run whose log cannot be read is skipped
    with the reason; the others go on."""
    match = {"repo": only[0], "milestone_id": only[1]} if only else {}
    stuck = _by_run(read_rows(con, StuckPointRow, match, order_by=(*KEY, "start_seq")))
    hints = _by_run(read_rows(con, HintResponseRow, match, order_by=(*KEY, "hint_seq")))
    progress = _by_run(read_rows(con, ProgressCurveRow, match, order_by=(*KEY, "seq")))
    views = []
    for summary in read_rows(con, MilestoneSummaryRow, match, order_by=KEY):
        where = "/".join(summary.key)
        try:
            files = store.milestone_run(*summary.key)
            events = Recorder.open(files.dir, on_warning=log, repair=False).events()
        except ArtifactError as e:
            log(f"{where}: not distilled: {e}")
            continue
        if not events:
            log(f"{where}: not distilled: its trajectory.jsonl has no events")
            continue
        provenance = RunProvenance(
            repo=summary.repo,
            run_id=summary.run_id,
            milestone_id=summary.milestone_id,
            agent=summary.agent or "",
            model=summary.model or "",
            harness_version=summary.harness_version or "",
            rules_hash=rules_hash,
            synthetic=bool(summary.synthetic),
            mode=summary.mode,
            harness_profile=summary.harness_profile,
            test_visibility=summary.test_visibility,
            plan_id=summary.plan_id,
            scaffold=summary.scaffold,
            scaffold_version=summary.scaffold_version or "",
        )
        key = summary.key
        views.append(RunView(summary, events, rebuild(events), provenance, stuck[key], hints[key], progress[key]))
    return views


def _by_run(rows: list[Row]) -> defaultdict[RunKey, list[Row]]:
    grouped: defaultdict[RunKey, list[Row]] = defaultdict(list)
    for row in rows:
        grouped[row.key].append(row)
    return grouped
