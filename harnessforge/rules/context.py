"""The `harness.context` section: each Dev model's context window, and how a long milestone stays inside it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..models.common import Model


class Window(Model):
    context: int = Field(gt=0, description="Tokens a request may hold, prompt and answer")
    output: int = Field(gt=0, description="The most tokens an answer may take (reserved on every call)")


class ContextRules(Model):
    policy: Literal["mask", "none"] = Field(
        "mask", description="mask: older tool outputs become a one-line stub; none: the conversation only grows"
    )
    keep_recent_outputs: int = Field(4, ge=0, description="The latest tool outputs never elided")
    margin_tokens: int = Field(512, ge=0, description="Kept free besides the output cap: estimates are estimates")
    chars_per_token: float = Field(3.0, gt=0, description="The estimate before the API has counted a prompt")
    default: Window = Field(Window(context=32768, output=4096), description="A model the table does not know")
    windows: dict[str, Window] = Field(
        default_factory=dict, description="Per model-name prefix (the longest wins), lower case"
    )
