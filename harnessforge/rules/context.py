"""The `harness.context` section: each Dev model's context window, and how a long milestone stays inside it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..models.common import Model


class Window(Model):
    context: int = Field(gt=0, description="Tokens a request may hold, prompt and answer")
    output: int = Field(gt=0, description="The most tokens an answer may take (reserved on every call)")


class ContextRules(Model):
    policy: Literal["mask", "summarize", "none"] = Field(
        "mask",
        description="mask: older tool outputs become a one-line stub; summarize: that, and when it is not enough the "
        "Dev's own model summarizes the older turns (a costed call); none: the conversation only grows. A scaffold "
        "(mini-swe-agent, OpenHarness, Claude Code) keeps its own context: native",
    )
    keep_recent_outputs: int = Field(4, ge=0, description="The latest tool outputs never elided")
    keep_recent_turns: int = Field(4, ge=1, description="summarize: the latest Dev turns kept whole")
    margin_tokens: int = Field(512, ge=0, description="Kept free besides the output cap: estimates are estimates")
    compact_to: float = Field(
        0.6,
        gt=0,
        le=1,
        description="A compaction brings the conversation to this share of the budget: rare ones, "
        "so a prompt cache holds between them",
    )
    chars_per_token: float = Field(3.0, gt=0, description="The estimate before the API has counted a prompt")
    default: Window = Field(Window(context=32768, output=4096), description="A model the table does not know")
    windows: dict[str, Window] = Field(
        default_factory=dict, description="Per model-name prefix (the longest wins), lower case"
    )

    def window(self, model: str) -> tuple[Window, bool]:
        """`model`'s window (a provider prefix such as `anthropic/` and the case ignored), and whether it is listed
        (else the default)."""
        found = longest_prefix(model, self.windows)
        return (self.windows[found], True) if found else (self.default, False)


def longest_prefix(model: str, table: dict) -> str | None:
    """The longest key of `table` that `model` (without a provider prefix, lower case) starts with."""
    name = model.rsplit("/", 1)[-1].lower()
    return max((prefix for prefix in table if name.startswith(prefix)), key=len, default=None)


class Sampling(Model):
    """How a model backend asks (`openai`, `anthropic`): None leaves a setting to the API's default, except the output
    cap, which is always sent (the model's `windows` output, else this): a self-hosted server otherwise writes until
    its own limit."""

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_output_tokens: int | None = Field(None, gt=0, description="None: the model's window output cap")
    timeout_s: float | None = Field(None, gt=0, description="One call's timeout (None: the backend's, 600 s)")
    extra_body: dict = Field(default_factory=dict, description="Server-specific fields (vLLM's top_k, ...)")

    def over(self, other: "Sampling") -> "Sampling":
        """`other`'s settings where it has them, these elsewhere (extra_body merged)."""
        values = {name: value for name, value in other.model_dump(exclude={"extra_body"}).items() if value is not None}
        return self.model_copy(update={**values, "extra_body": {**self.extra_body, **other.extra_body}})


class SamplingRules(Model):
    default: Sampling = Field(default_factory=Sampling)
    models: dict[str, Sampling] = Field(default_factory=dict, description="Per model-name prefix (the longest wins)")

    def of(self, model: str, context: ContextRules, asked: Sampling | None = None) -> Sampling:
        """`model`'s settings: the default, its prefix's, then `asked` (the command line); the output cap, if
        none says one, the model's window output cap."""
        found = longest_prefix(model, self.models)
        sampling = self.default.over(self.models[found]) if found else self.default
        sampling = sampling.over(asked) if asked else sampling
        if sampling.max_output_tokens is None:
            sampling = sampling.model_copy(update={"max_output_tokens": context.window(model)[0].output})
        return sampling
