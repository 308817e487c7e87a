"""Token counts of exported rows, for the dataset card: trainers drop or cut rows longer than their
`max_length`, so the card says how long each file's rows are.

With a tokenizer (`export --tokenizer DIR`, a local Hugging Face tokenizer with a chat template) a
row's count is its longest conversation rendered by that template and tokenized. Without one it is
an approximation: the characters of the conversation and tool schemas as JSON divided by the
rules' `export.chars_per_token`.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..models.trajectory import Message
from .chat import as_objects


@dataclass
class TokenCount:
    rows: int
    total: int
    longest: int
    median: int


class TokenCounter:
    def __init__(self, tokenizer: Any = None, chars_per_token: float = 4.0):
        self.tokenizer = load_tokenizer(tokenizer) if isinstance(tokenizer, (str, Path)) else tokenizer
        self.name = str(tokenizer) if isinstance(tokenizer, (str, Path)) else getattr(tokenizer, "name_or_path", "")
        self.chars_per_token = chars_per_token

    @property
    def method(self) -> str:
        if self.tokenizer is not None:
            return f"the chat template and tokenizer of `{self.name or 'the given tokenizer'}`"
        return (
            f"approximate: characters of the row's messages and tools as JSON / {self.chars_per_token:g} "
            "(rules: export.chars_per_token; pass `export --tokenizer DIR` for exact counts)"
        )

    def count(self, rows: list[dict[str, Any]]) -> TokenCount:
        lengths = [max(self.tokens(messages, row) for messages in conversations(row)) for row in rows]
        return TokenCount(len(rows), sum(lengths), max(lengths, default=0), int(statistics.median(lengths or [0])))

    def tokens(self, messages: list[Message], row: dict[str, Any]) -> int:
        tools = row.get("tools")
        tools = json.loads(tools) if isinstance(tools, str) else tools
        if self.tokenizer is None:
            text = json.dumps({"messages": messages, "tools": tools}, ensure_ascii=False)
            return math.ceil(len(text) / self.chars_per_token)
        try:
            text = self.tokenizer.apply_chat_template(as_objects(messages), tools=tools, tokenize=False)
        except Exception as e:  # a template's own error (jinja, a raise_exception in it): one line
            name = self.name or "the tokenizer"
            raise ConfigError(f"the chat template of {name} fails on row {row['id']}: {e}") from None
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def conversations(row: dict[str, Any]) -> list[list[Message]]:
    """The whole conversations a trainer tokenizes for this row (DPO: both sides)."""
    if "messages" in row:
        return [row["messages"]] + ([row["rejected_messages"]] if "rejected_messages" in row else [])
    if "completion" in row:
        return [row["prompt"] + row["completion"]]
    if "chosen_output" in row:
        return [row["input"] + row["chosen_output"], row["input"] + row["rejected_output"]]
    return [row["prompt"] + row["chosen"], row["prompt"] + row["rejected"]]


def load_tokenizer(path: str | Path):
    """A local tokenizer directory (never a download); it must have a chat template."""
    from transformers import AutoTokenizer

    if not Path(path).is_dir():
        raise ConfigError(f"--tokenizer {path}: not a local tokenizer directory (there is no such directory)")
    if not any((Path(path) / name).exists() for name in ("tokenizer.json", "tokenizer_config.json")):
        raise ConfigError(f"--tokenizer {path}: not a local tokenizer directory (no tokenizer.json in it)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"--tokenizer {path}: not a local tokenizer directory ({first})") from None
    if not tokenizer.chat_template:
        raise ConfigError(f"--tokenizer {path}: the tokenizer has no chat template to count tokens with")
    return tokenizer
