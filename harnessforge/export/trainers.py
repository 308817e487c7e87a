"""The dataset card's part on files: rows and tokens per file, how to load them, the settings each
trainer needs to use a file as it is (with its defaults TRL drops every row longer than 1024 tokens,
OpenRLHF every row longer than 2048), and KTO's label balance."""

from __future__ import annotations

from collections import Counter

LOADING = [
    'Load a Parquet file with `datasets.load_dataset("parquet", data_files="dpo/trl.parquet", split="train")`.',
    "Parquet needs datasets >= 4.7 (conversations are `Json` features, which 4.6 cannot read); rows and `map`",
    "decode them from 4.7, `Dataset.to_list()` from 4.8.5. Every column has one declared type in every Parquet",
    'file (`datasets.concatenate_datasets` takes any of one dialect; `load_dataset("json")` infers each JSON',
    "lines file's types on its own), except `tools`: a list of objects in `trl` files, a JSON string in `swift`",
    "files, as each trainer documents it. A stuck slice's outcome is `resolution`; `label` is KTO's boolean.",
    "",
    "What is trained: SFT files (whole milestones, phases, chains, stuck slices) hold only runs and stretches that",
    "succeeded. A stuck slice is resolved (by the Dev or after a hint) and trains from the turn the Dev started to",
    "recover; the stuck turns before it are context, never trained. A stretch never resolved, and every run that did",
    "not pass, is only a KTO negative (`label` false) or the rejected side of a DPO pair.",
    "",
    "`trl` files are TRL's conversational format (tool arguments as objects, a `tools` column, reasoning as",
    "`reasoning_content`); `swift` files are ms-swift's (`messages` with per-message `loss`, reasoning as a",
    "`<think>` prefix of the content, `rejected_messages`); `openrlhf` files carry the tool schemas in the system",
    "message and tool arguments as objects, in `input`/`output` and (SFT) the whole conversation as `messages`,",
    "or `input`/`chosen_output`/`rejected_output` (DPO): OpenRLHF's own `prompt`/`chosen` columns would clash.",
]

# Per file: the trainer and the settings it needs. {longest}: the file's longest row in tokens.
SETTINGS = {
    "sft/trl": "TRL `SFTTrainer`: `SFTConfig(assistant_only_loss=True, max_length=None)` (or max_length >= {longest});"
    " a chat template with `{{% generation %}}` markers (TRL swaps in its own for the families it knows), so the"
    " tool results inside `completion` are not trained",
    "dpo/trl": "TRL `DPOTrainer`: `DPOConfig(max_length=None)` (or >= {longest}); each side is one assistant message",
    "kto/trl": "TRL `KTOTrainer`: `KTOConfig(max_length=None, per_device_train_batch_size=2 or more{weight})`"
    " (or max_length >= {longest}; the KL term needs two rows a batch)",
    "sft/swift": "`swift sft --dataset {file}.jsonl --max_length {longest} --loss_scale default`: the per-message"
    " `loss` keeps context turns untrained; longer rows are deleted (`--truncation_strategy delete`)",
    "dpo/swift": "`swift rlhf --rlhf_type dpo --dataset {file}.jsonl --max_length {longest}`",
    "kto/swift": "`swift rlhf --rlhf_type kto --dataset {file}.jsonl --max_length {longest}{weight_flag}`",
    "sft/openrlhf": "`python -m openrlhf.cli.train_sft --data.dataset {file}.jsonl --data.apply_chat_template"
    " --data.input_key input --data.output_key output --data.max_len {margin}` (every token of `output` is"
    " trained, tool results too), or `--data.input_key messages --data.multiturn --data.apply_chat_template"
    " --data.max_len {margin}` (assistant turns only, but every one of `messages`, the context before `output`"
    " too)",
    "dpo/openrlhf": "`python -m openrlhf.cli.train_dpo --data.dataset {file}.jsonl --data.apply_chat_template"
    " --data.prompt_key input --data.chosen_key chosen_output --data.rejected_key rejected_output"
    " --data.max_len {margin}`",
}


def files_section(report) -> list[str]:
    lines = [
        "## Files",
        "",
        "| file | rows | tokens: longest row | median | total |",
        "|---|---|---|---|---|",
    ]
    for name, count in sorted(report.rows.items()):
        tokens = report.tokens.get(name)
        numbers = f"{tokens.longest} | {tokens.median} | {tokens.total}" if tokens else "| |"
        lines.append(f"| `{name}` | {count} | {numbers} |")
    lines += ["", f"Tokens: {report.token_method}." if report.token_method else "", "", *LOADING, ""]
    lines += ["## Trainer settings", ""]
    for name in sorted(report.tokens):
        base = name.removeprefix("heldout/")  # held-out files need what their training files need
        kind = "sft" if base.startswith("stuck_slices/") else base.split("/")[0]
        template = SETTINGS.get(f"{kind}/{base.split('/')[1]}")
        if template and report.rows.get(name):
            longest = report.tokens[name].longest
            weight, weight_flag = kto_weights(report.labels.get(name, Counter()))
            setting = template.format(
                file=name, longest=longest, margin=longest + 2, weight=weight and f", {weight}", weight_flag=weight_flag
            )
            lines.append(f"- `{name}`: {setting}.")
    balance = {name: labels for name, labels in sorted(report.labels.items()) if labels}
    if balance:
        lines += ["", "## KTO label balance", "", "| file | desirable (true) | undesirable (false) | weight |"]
        lines += ["|---|---|---|---|"]
        for name, labels in balance.items():
            weight, _ = kto_weights(labels)
            lines.append(f"| `{name}` | {labels[True]} | {labels[False]} | {weight or 'balanced'} |")
    return lines + [""]


def kto_weights(labels: Counter) -> tuple[str, str]:
    """The loss weight that brings desirable x weight / undesirable into [1, 4/3] (the KTO paper's Eq. 8,
    as TRL's KTOTrainer checks it), as a TRL argument and an ms-swift flag; nothing when balanced."""
    desirable, undesirable = labels[True], labels[False]
    if not desirable or not undesirable or desirable == undesirable:
        return "", ""
    if desirable < undesirable:
        weight = round(undesirable / desirable, 2)
        return f"desirable_weight={weight}", f" --desirable_weight {weight}"
    weight = round(desirable / undesirable, 2)
    return f"undesirable_weight={weight}", f" --undesirable_weight {weight}"
