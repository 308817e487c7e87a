"""The Dev's context window: a budget per model, and the compaction that keeps a long milestone under it.

A milestone takes tens of turns with tool outputs of thousands of characters each, and a chain hundreds: a
conversation that only grows ends in the API's "context length exceeded". Before each model call the
conversation's size is estimated (its JSON characters per token, calibrated by the prompt tokens the API
reported for the last call); over the budget (the model's context window less its output cap and a margin,
`harness.context`), the `mask` policy replaces the oldest tool outputs with a one-line stub saying their length
(observation masking), keeping the most recent `keep_recent_outputs` and the latest failing test run whole; the
task, the hints, the memory and every message of the Dev stay. What was elided is a `compaction` event, so the
conversation rebuilt from the log (resume, distillation, ATIF) is the one the model saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..models.trajectory import Message
from ..rules import ContextRules

STUB = "[output elided to fit the context window: {chars} characters]"
# What a server says when a request is over the model's context (OpenAI, vLLM, llama.cpp, Anthropic)
OVERFLOW = re.compile(r"context|too long|maximum.{0,40}tokens|exceeds.{0,60}tokens", re.I)


class ContextExhausted(Exception):
    """Even with every maskable output elided the conversation is over the budget."""


@dataclass
class Compaction:
    before_tokens: int
    after_tokens: int
    elided: list[str]  # tool_call_ids whose outputs became stubs

    def args(self, policy: str, window: int) -> dict:
        return {"policy": policy, "window": window, "before_tokens": self.before_tokens} | {
            "after_tokens": self.after_tokens,
            "elided": self.elided,
        }


def window_of(model: str, rules: ContextRules) -> tuple[int, int, bool]:
    """(context tokens, output cap, known) of `model`: the longest prefix listed in `harness.context.windows`, else
    the rules' default."""
    window, known = rules.window(model)
    return window.context, window.output, known


def overflowed(error: Exception) -> bool:
    """An API error that says the request is over the model's context (HTTP 400 or 413)."""
    return getattr(error, "status_code", None) in (400, 413) and bool(OVERFLOW.search(str(error)))


def elide(messages: list[Message], call_ids: Iterable[str]) -> list[Message]:
    """`messages` with the outputs of these tool calls replaced by their stub: one function, so the live
    conversation and the one rebuilt from the log are the same."""
    ids = set(call_ids)
    return [
        {**message, "content": STUB.format(chars=len(str(message["content"])))}
        if message.get("role") == "tool" and message.get("tool_call_id") in ids and not _is_stub(message)
        else message
        for message in messages
    ]


def _chars(content: object) -> int:
    return len(json.dumps(content, ensure_ascii=False))


def _is_stub(message: Message) -> bool:
    return str(message.get("content", "")).startswith(STUB.split("{")[0])


class ContextBudget:
    """One milestone's budget: `fit` before every model call, `calibrate` after it."""

    def __init__(
        self, model: str, rules: ContextRules, log: Callable[[str], None] = print, tools: list[dict] | None = None
    ):
        self.rules, self.chars_per_token = rules, rules.chars_per_token
        # the tool schemas go with every request: counted with the messages, a calibration from a short
        # conversation would otherwise spread their tokens over the messages and overestimate long ones
        self.fixed_chars = len(json.dumps(tools or [], ensure_ascii=False))
        self.window, self.output, known = window_of(model, rules)
        if not known:
            log(
                f"warning: no context window known for model {model or '(none)'}: using {self.window} tokens "
                f"({self.output} for output); set it in the rules' harness.context.windows"
            )

    @property
    def limit(self) -> int:
        """The most prompt tokens a call may send."""
        return max(1, self.window - self.output - self.rules.margin_tokens)

    def tokens(self, messages: list[Message]) -> int:
        return int((len(json.dumps(messages, ensure_ascii=False)) + self.fixed_chars) / self.chars_per_token) + 1

    def calibrate(self, messages: list[Message], prompt_tokens: int) -> None:
        """The API's count for what was sent: later estimates use its characters per token."""
        if prompt_tokens > 0:  # within what any tokenizer gives: a server's nonsense count changes little
            ratio = (len(json.dumps(messages, ensure_ascii=False)) + self.fixed_chars) / prompt_tokens
            self.chars_per_token = min(8.0, max(1.0, ratio))

    def fit(
        self,
        messages: list[Message],
        protect: Iterable[str] = (),
        limit: int | None = None,
        keep_recent: int | None = None,
    ) -> Compaction | None:
        """The outputs to elide, oldest first, so `messages` fits (`limit`, default the budget; `keep_recent`, default
        the rules', outputs kept whole); None when it fits already. Raises ContextExhausted when eliding every output
        it may does not get it under."""
        limit = self.limit if limit is None else limit
        target = max(1, int(limit * self.rules.compact_to))  # well under: the next compaction is turns away
        keep = self.rules.keep_recent_outputs if keep_recent is None else keep_recent
        before = self.tokens(messages)
        if before <= limit or self.rules.policy == "none":
            return None
        outputs = [message for message in messages if message.get("role") == "tool" and not _is_stub(message)]
        recent = {message.get("tool_call_id") for message in outputs[max(0, len(outputs) - keep) :]} if keep else set()
        kept = recent | set(protect)
        elided: list[str] = []
        now = before
        for message in (m for m in outputs if m.get("tool_call_id") not in kept):
            elided.append(message["tool_call_id"])
            (stubbed,) = elide([message], elided[-1:])  # what eliding it saves, without measuring all again
            now -= (_chars(message["content"]) - _chars(stubbed["content"])) / self.chars_per_token
            if now <= target:
                break
        now = self.tokens(elide(messages, elided))
        if now <= limit:  # down to the target, or at least under the budget
            return Compaction(before, now, elided)
        raise ContextExhausted(
            f"the conversation needs {now} tokens with {len(elided)} tool outputs elided, over the {limit} the "
            f"context window of {self.window} tokens leaves"
        )
