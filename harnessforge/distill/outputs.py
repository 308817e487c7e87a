"""The distilled outputs, in one table: each output's file under `distilled/`, the model of its rows,
and the Dagster asset that materializes it. `distill`, the exports, the report and the Dagster layer
all read this table; none keeps its own list of names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import ValidationError

from ..errors import ArtifactError
from ..models.common import Model, first_error
from ..models.distill import ChainSegment, KTORow, PreferencePair, Review, Segment, TaskCard
from ..store import Store

Row = TypeVar("Row", bound=Model)


@dataclass(frozen=True)
class DistilledOutput(Generic[Row]):
    stem: str  # `distilled/<stem>.jsonl`; its key in `DistillReport.counts` and the manifest's counts
    asset: str  # the Dagster asset that holds it, per (repo, milestone)
    row: type[Row]  # one JSON line is one of these


STUCK_SLICES = DistilledOutput("stuck_slices", "stuck_slices", Segment)
DPO_PAIRS = DistilledOutput("dpo_pairs", "dpo_pairs", PreferencePair)
KTO = DistilledOutput("kto", "kto_rows", KTORow)
SFT = DistilledOutput("sft", "sft_segments", Segment)
REVIEWS = DistilledOutput("reviews", "reviews", Review)
TASK_CARDS = DistilledOutput("task_cards", "task_cards", TaskCard)
# What `distill` writes, in this order; `export.verify` then writes the task cards that reproduce.
DISTILLED_OUTPUTS = (STUCK_SLICES, DPO_PAIRS, KTO, SFT, REVIEWS, TASK_CARDS)
VERIFIED_TASKS = DistilledOutput("verified_tasks", "verified_tasks", TaskCard)
# Chain rows span milestones, so no milestone's cut holds them: `distill` of the whole store and `assemble`
# make them from the SFT milestone segments and reviews (Dagster: inside `training_datasets`).
CHAINS = DistilledOutput("chains", "training_datasets", ChainSegment)


def read_distilled(store: Store, output: DistilledOutput[Row], only: tuple[str, str] | None = None) -> list[Row]:
    """The rows of one output, store-wide or of milestone `only` (none when it was never written); a
    line that is not a valid row stops the read with one line naming it."""
    path = store.distilled_file(output.stem, only)
    if not path.exists():
        return []
    rows = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(output.row.model_validate_json(line))
        except ValidationError as e:
            why = f"invalid {output.row.__name__}: {first_error(e)}"
            raise ArtifactError(f"{path}:{number}: {why}; re-run `harnessforge distill`") from None
    return rows
