"""The Dev's context window: a budget per model, and the compaction that keeps a long milestone under it.

A milestone takes tens of turns with tool outputs of thousands of characters each, and a chain hundreds: a
conversation that only grows ends in the API's "context length exceeded". Before each model call the
conversation's size is estimated (its JSON characters per token, calibrated by the prompt tokens the API
reported for the last call); over the budget (the model's context window less its output cap and a margin,
`harness.context`), the `mask` policy replaces the oldest tool outputs with a one-line stub saying their length
(observation masking), keeping the most recent `keep_recent_outputs` and the latest failing test run whole; the
task, the hints, the memory and every message of the Dev stay. Masking cannot shrink the Dev's own turns: when it
cannot reach its target (`compact_to` of the budget; short of it every turn would compact again), `summarize` has the
Dev's own model summarize the turns before the latest `keep_recent_turns` (a costed call), which then become one
message, the hints and the latest failing output in them kept word for word.
What was elided or summarized is a `compaction` event, so the conversation rebuilt from the log (resume,
distillation, ATIF) is the one the model saw (`compacted`, one function for both).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..agents.base import rendered
from ..models.trajectory import AgentTurn, Message
from ..rules import ContextRules

STUB = "[output elided to fit the context window: {chars} characters]"
SUMMARY = "[Your earlier turns, summarized by you to fit the context window]\n{summary}"
SUMMARIZE = (
    "The conversation below is your own earlier work on a coding task; it no longer fits your context window. "
    "Summarize it for yourself, in at most 300 words: what you learned about the code, what you changed, what you "
    "ran and what it showed, what failed, and what you meant to do next. Plain text."
)
HINT_MARK = "[hint L"  # how a hint starts (`MentorRules.frame`): hints are kept word for word
# What a server says when a request is over the model's context (OpenAI, vLLM, llama.cpp, Anthropic)
OVERFLOW = re.compile(r"context|too long|maximum.{0,40}tokens|exceeds.{0,60}tokens", re.I)


class ContextExhausted(Exception):
    """Even with every maskable output elided the conversation is over the budget."""


@dataclass
class Compaction:
    before_tokens: int
    after_tokens: int
    elided: list[str]  # tool_call_ids whose outputs became stubs
    summarized: int = 0  # the messages after the task that one summary message replaced
    summary: str = ""  # that message
    turn: AgentTurn | None = None  # the summary's model call: its usage and cost

    def args(self, policy: str, window: int) -> dict:
        args = {"policy": policy, "window": window, "before_tokens": self.before_tokens}
        args |= {"after_tokens": self.after_tokens, "elided": self.elided}
        return args | ({"summarized": self.summarized, "summary": self.summary} if self.summarized else {})

    def costs(self) -> dict:
        """The event fields of the summary's call (none for masking)."""
        turn = self.turn
        return {"usage": turn.usage, "cost_usd": turn.cost_usd, "model": turn.model} if turn else {}


def compacted(messages: list[Message], args: dict) -> list[Message]:
    """`messages` after the compaction its event's `args` describe: outputs elided, then older turns summarized; or
    a scaffold's own (`native`): the view it left, after the system prompt."""
    if args.get("policy") == "native":
        return messages[:1] + args["view"]
    messages = elide(messages, args.get("elided", []))
    count = args.get("summarized", 0)
    return messages[:2] + [{"role": "user", "content": args["summary"]}] + messages[2 + count :] if count else messages


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
        ask: Callable[[list[Message]], AgentTurn] | None = None,
    ) -> Compaction | None:
        """The outputs to elide, oldest first, so `messages` fits (`limit`, default the budget; `keep_recent`, default
        the rules', outputs kept whole), and under `summarize` when that is not enough, the older turns summarized by
        `ask` (the Dev's model); None when it fits already. Raises ContextExhausted when it cannot get under."""
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
        summarize = self.rules.policy == "summarize" and ask is not None
        # down to the target; or, short of it, under the budget when masking is all there is (the next turn then
        # compacts again: under `summarize` the summary brings it down instead)
        if now <= target or (now <= limit and not summarize):
            return Compaction(before, now, elided)
        if summarize:
            return self._summarized(messages, elided, set(protect), before, limit, ask)
        raise ContextExhausted(
            f"the conversation needs {now} tokens with {len(elided)} tool outputs elided, over the {limit} the "
            f"context window of {self.window} tokens leaves"
        )

    def _summarized(
        self,
        messages: list[Message],
        elided: list[str],
        protect: set[str],
        before: int,
        limit: int,
        ask: Callable[[list[Message]], AgentTurn],
    ) -> Compaction:
        """The turns before the latest `keep_recent_turns` as one summary message, written by the Dev's model."""
        masked = elide(messages, elided)
        turns = [index for index, message in enumerate(masked) if index >= 2 and message["role"] == "assistant"]
        if len(turns) <= self.rules.keep_recent_turns:
            raise ContextExhausted(
                f"the conversation needs {self.tokens(masked)} tokens, over the {limit} the context window of "
                f"{self.window} tokens leaves, with only its latest {len(turns)} turns to summarize"
            )
        older = masked[2 : turns[-self.rules.keep_recent_turns]]
        text = rendered(older)
        room = int(limit * 0.8 * self.chars_per_token) - len(SUMMARIZE)  # the request fits too: its end kept
        text = text if len(text) <= room else "[...]\n" + text[-room:]
        turn = ask([{"role": "system", "content": SUMMARIZE}, {"role": "user", "content": text}])
        kept = [m["content"] for m in older if m["role"] == "user" and str(m["content"]).startswith(HINT_MARK)]
        kept += [f"The latest failing test run:\n{m['content']}" for m in older if m.get("tool_call_id") in protect]
        summary = "\n\n".join([SUMMARY.format(summary=turn.text.strip()), *kept])
        compaction = Compaction(before, 0, elided, len(older), summary, turn)
        compaction.after_tokens = self.tokens(compacted(messages, compaction.args("summarize", self.window)))
        if compaction.after_tokens > limit:
            raise ContextExhausted(
                f"the conversation needs {compaction.after_tokens} tokens with its older turns summarized, over "
                f"the {limit} the context window of {self.window} tokens leaves"
            )
        return compaction
