"""The dataset card's YAML front matter: what the Hugging Face Hub and `datasets.load_dataset(<export dir>, config)`
read. One config per file family and trainer dialect (`sft-trl`, `dpo-swift`, `stuck_slices-openrlhf`, ...), each
with its `train` and `heldout` splits (the Parquet files, whose column types are declared); the license of the
repositories the rows come from (their license files, identified by `identify`), task categories, tags and a size
category. Without it `load_dataset` took the folder for one dataset of whatever files it found first."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import yaml

from ..errors import ArtifactError
from ..gitio import GitRepo
from ..store import Store

FAMILIES = ("sft", "stuck_slices", "chains", "dpo", "kto")  # the row files, in the order the card lists them
LICENSE_FILE = re.compile(r"^(licen[cs]e|copying)([-._][\w.-]*)?$", re.I)
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
TAGS = ["code", "agents", "software-engineering", "trajectories", "harnessforge"]


def configs(out: Path, rows: dict[str, int]) -> list[dict]:
    """A config for each family and dialect with rows: its Parquet files under `out`, per split."""
    found = []
    for family in FAMILIES:
        for dialect in sorted({name.split("/")[-1] for name in rows if name.split("/")[-2:-1] == [family]}):
            splits = [
                {"split": split, "path": f"{prefix}{family}/{dialect}.parquet"}
                for split, prefix in (("train", ""), ("heldout", "heldout/"))
                if rows.get(f"{prefix}{family}/{dialect}") and (out / f"{prefix}{family}/{dialect}.parquet").exists()
            ]
            if splits:
                found.append({"config_name": f"{family}-{dialect}", "data_files": splits})
    return found


def repository_license(store: Store, key: str) -> str | None:
    """The SPDX id of the license a planned repository is under (its license files at the plan's last commit;
    several, like Rust's LICENSE-APACHE and LICENSE-MIT, are a choice: `A OR B`); None when none is identified."""
    from identify.identify import license_id

    try:
        commit = store.load_plan(key).to_commit
        repo = GitRepo(store.git_cache(key))
        names = [name for name in repo.files(commit) if "/" not in name and LICENSE_FILE.match(name)]
    except (ArtifactError, OSError, ValueError):
        return None
    found = set()
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            path = Path(scratch) / "license"
            path.write_bytes(repo.show(commit, name))
            try:
                spdx = license_id(str(path))
            except UnicodeDecodeError:
                spdx = None
            found |= {spdx} if spdx else set()
    return " OR ".join(sorted(found)) if found else None


def front_matter(store: Store, out: Path, rows: dict[str, int], repos: list[str]) -> tuple[str, list[str]]:
    """The card's YAML block (between `---` lines) and the warnings it gives: a repository whose license is not
    identified, or repositories under different licenses (the card then lists each and says `other`)."""
    licenses = {key: repository_license(store, key) for key in sorted(repos)}
    each = "; ".join(f"{key}: {spdx or 'unknown'}" for key, spdx in licenses.items())
    unknown = [key for key, spdx in licenses.items() if spdx is None]
    warnings = [f"{key}: no license identified in its license files; the dataset card says `other`" for key in unknown]
    known = sorted({spdx for spdx in licenses.values() if spdx})
    if len(known) > 1:
        warnings.append(f"the rows come from repositories under different licenses ({each}); the card says `other`")
    single = len(known) == 1 and " OR " not in known[0] and not unknown
    found = configs(out, rows)
    files = [split["path"].removesuffix(".parquet") for config in found for split in config["data_files"]]
    largest = max((rows[name] for name in files), default=0)
    data = {
        "pretty_name": "HarnessForge export",
        "license": known[0].lower() if single else "other",
        **({} if single else {"license_details": each}),
        "task_categories": ["text-generation"],
        "tags": TAGS,
        "size_categories": [next((name for limit, name in SIZES if largest < limit), "n>1M")],
        "configs": found,
    }
    return "---\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True) + "---\n", warnings
