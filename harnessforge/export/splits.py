"""Held-out repositories: whole repositories kept out of training, for evaluating what was trained.

A repository is held out when the rules' `export.heldout.repos` lists it (owner/name or its store
key) or when its key's hash falls under `export.heldout.fraction` (stable across runs and machines,
so a repository never moves between splits when others are added). Every format then writes its
held-out rows under `heldout/` with the same layout as the training files, and every row carries
its `split`.
"""

from __future__ import annotations

import hashlib

from ..rules import HeldoutRules

TRAIN, HELDOUT = "train", "heldout"


def split_of(repo: str, rules: HeldoutRules) -> str:
    listed = {name.replace("/", "__", 1) for name in rules.repos}
    if repo in listed:
        return HELDOUT
    share = int(hashlib.sha256(repo.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return HELDOUT if share < rules.fraction else TRAIN
