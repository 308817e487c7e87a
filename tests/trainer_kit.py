"""A tokenizer and a model built on the spot (no downloads), for running real trainers on exported files.

The chat template is Qwen3-shaped: tools listed in the system turn, reasoning as `<think>`, tool
calls whose arguments are iterated as a mapping (as Qwen3's and GLM-4-MoE's templates do, so a
JSON-string argument fails here as it does there), tool results as their own turns, the assistant
turns inside `{% generation %}` for assistant-only loss masks, and a generation prompt.
"""

from __future__ import annotations

from collections.abc import Iterable

TEMPLATE = """{%- set system = messages[0].content if messages and messages[0].role == 'system' else '' -%}
{%- if system or tools -%}<|im_start|>system
{{ system }}{% if tools %}
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>{% endif %}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'assistant' -%}<|im_start|>assistant
{% generation %}{% if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>
{% endif %}{{ message.content or '' }}{% for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": { {%- for key, value in call.function.arguments | items -%}
"{{ key }}": {{ value | tojson }}{% if not loop.last %}, {% endif %}{%- endfor -%} }}
</tool_call>{% endfor %}<|im_end|>{% endgeneration %}
{% elif message.role == 'tool' -%}<|im_start|>tool
{{ message.content }}<|im_end|>
{% elif message.role != 'system' -%}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"""

SPECIAL = ["[UNK]", "[PAD]", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]


def build_tokenizer(texts: Iterable[str]):
    """A word-level tokenizer whose vocabulary is the words of `texts`, with TEMPLATE as its chat template."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from tokenizers.trainers import WordLevelTrainer
    from transformers import PreTrainedTokenizerFast

    model = Tokenizer(WordLevel(unk_token="[UNK]"))
    model.pre_tokenizer = Whitespace()
    model.train_from_iterator(texts, WordLevelTrainer(special_tokens=SPECIAL))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=model, unk_token="[UNK]", pad_token="[PAD]", eos_token="<|im_end|>", bos_token=None
    )
    tokenizer.chat_template = TEMPLATE
    return tokenizer


def tiny_model(tokenizer, seed: int = 0):
    """A randomly initialised two-layer Qwen2 over the tokenizer's vocabulary."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32768,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return Qwen2ForCausalLM(config)
