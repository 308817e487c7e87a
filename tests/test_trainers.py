"""The exported files in the trainers themselves, as written: TRL's SFT, DPO and KTO trainers take
one step each on a tiny random model with a tokenizer built here (no downloads), OpenRLHF's own SFT
and DPO datasets read its files, ms-swift's rows carry the reasoning the way its docs say (ms-swift
itself pins datasets < 5, so it cannot be installed beside us), every column has one type in every
file, and the card counts tokens with the given tokenizer and names each trainer's settings."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest

from harnessforge.distill import distill
from harnessforge.errors import ConfigError
from harnessforge.export import export
from harnessforge.export.chat import THINK
from harnessforge.export.columns import features
from harnessforge.export.trainers import kto_weights
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import craft, explore
from tests.test_distill import craft_more
from tests.trainer_kit import build_tokenizer, tiny_model
from tests.trajectories import CraftedRun

OPENRLHF = Path(__file__).parents[1] / ".tools" / "openrlhf"  # scripts/install.sh puts OpenRLHF there
REASONING = "The feature filters items; run() returns them unfiltered."


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("trainers")
    store = Store(root / "store")
    craft(store)
    craft_more(store)
    run = explore(CraftedRun(store, "thinking", mid="m03")).say("Filtering goes in run().", reasoning=REASONING)
    run.edit(sha="k1").say(reasoning="Now the tests.").test(1, 0).finish("PASS")
    distill(store, load_rules(), log=lambda *_: None)
    tokenizer = build_tokenizer(line for path in store.distilled_dir().rglob("*.jsonl") for line in path.open())
    report = export(store, ["sft", "dpo", "kto"], root / "out", tokenizer=tokenizer)
    return store, root / "out", report, tokenizer


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def load(out: Path, name: str, suffix: str) -> datasets.Dataset:
    builder = "json" if suffix == "jsonl" else "parquet"
    return datasets.load_dataset(builder, data_files=str(out / f"{name}.{suffix}"), split="train")


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
@pytest.mark.parametrize("name", ["sft/trl", "stuck_slices/trl", "dpo/trl", "kto/trl"])
def test_trl_trainers_take_a_step_on_every_row_of_each_file(exported, name, suffix, tmp_path, caplog):
    trl = pytest.importorskip("trl")
    _, out, report, tokenizer = exported
    data = load(out, name, suffix)
    assert len(data) == report.rows[name] > 0
    common = {
        "output_dir": str(tmp_path),
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "report_to": [],
        "save_strategy": "no",
        "use_cpu": True,
    }
    kind = name.split("/")[0]
    if kind in ("sft", "stuck_slices"):
        args = trl.SFTConfig(**common, assistant_only_loss=True, max_length=None)
        trainer = trl.SFTTrainer(model=tiny_model(tokenizer), args=args, train_dataset=data, processing_class=tokenizer)
    else:  # DPO and KTO train against a reference model; KTO with the weight the card gives its label balance
        weight, _ = kto_weights(report.labels[name]) if kind == "kto" else ("", "")
        setting = {key: float(value) for key, value in dict([weight.split("=")] if weight else []).items()}
        config, trainer_class = (trl.DPOConfig, trl.DPOTrainer) if kind == "dpo" else (trl.KTOConfig, trl.KTOTrainer)
        trainer = trainer_class(
            model=tiny_model(tokenizer),
            ref_model=tiny_model(tokenizer, seed=1),
            args=config(**common, max_length=None, **setting),
            train_dataset=data,
            processing_class=tokenizer,
        )
    assert len(trainer.train_dataset) == len(data)  # no row dropped or cut
    result = trainer.train()
    assert trainer.state.global_step == 1 and math.isfinite(result.training_loss)
    assert "ideal range" not in caplog.text
    if kind in ("sft", "stuck_slices"):  # assistant turns are trained, tool results are not
        trained = [
            tokenizer.decode([token for token, label in zip(row["input_ids"], row["labels"]) if label != -100])
            for row in trainer.train_dataset
        ]
        assert all(trained) and any("<tool_call>" in text for text in trained)
        assert not any("passed" in text for text in trained)
        assert any("passed" in tokenizer.decode(row["input_ids"]) for row in trainer.train_dataset)


@pytest.fixture(scope="module")
def openrlhf():
    sys.path.append(str(OPENRLHF))  # after ours: the package ships a top-level `tests` too
    try:
        import openrlhf.datasets
    except ImportError as e:
        from tests.conftest import REQUIRE_DOCKER

        if REQUIRE_DOCKER:
            pytest.fail(f"HARNESSFORGE_REQUIRE_DOCKER=1 but OpenRLHF is not in {OPENRLHF} ({e}): run install.sh")
        pytest.skip(f"OpenRLHF is not in {OPENRLHF}: run scripts/install.sh")
    return openrlhf.datasets


def rlhf_strategy(**data):
    """What OpenRLHF's datasets read of its strategy: the `--data.*` flags, and a print."""
    return SimpleNamespace(args=SimpleNamespace(data=SimpleNamespace(apply_chat_template=True, **data)), print=print)


@pytest.mark.parametrize("name", ["sft/openrlhf", "stuck_slices/openrlhf"])
def test_openrlhf_sft_dataset_reads_both_modes(exported, openrlhf, name):
    _, out, _, tokenizer = exported
    for suffix in ("jsonl", "parquet"):
        data = load(out, name, suffix)
        multiturn = openrlhf.SFTDataset(
            data, tokenizer, 100_000, rlhf_strategy(input_key="messages"), num_processors=1, multiturn=True
        )
        pair = openrlhf.SFTDataset(
            data, tokenizer, 100_000, rlhf_strategy(input_key="input", output_key="output"), num_processors=1
        )
        assert len(multiturn) == len(pair) == len(data) > 0
        for index, row in enumerate(jsonl(out / f"{name}.jsonl")):
            assistant_turns = sum(message["role"] == "assistant" for message in row["messages"])
            assert len(multiturn.response_ranges[index]) == assistant_turns
            input_ids, _, loss_mask = multiturn[index]
            assert 0 < loss_mask.sum() < input_ids.shape[1]
            text = pair.prompts[index] + pair.responses[index]
            assert isinstance(text, str) and "<tool_call>" in text
            for call in (call for message in row["messages"] for call in message.get("tool_calls") or []):
                assert isinstance(call["function"]["arguments"], dict)  # once encoded, by the template
                for key, value in call["function"]["arguments"].items():
                    assert f'"{key}": {json.dumps(value)}' in text


def test_openrlhf_dpo_dataset_reads_the_pairs(exported, openrlhf):
    _, out, _, tokenizer = exported
    data = load(out, "dpo/openrlhf", "parquet")
    keys = {"prompt_key": "input", "chosen_key": "chosen_output", "rejected_key": "rejected_output"}
    dpo = openrlhf.RewardDataset(data, tokenizer, 100_000, rlhf_strategy(**keys), is_dpo=True, num_processors=1)
    assert len(dpo) == len(data) > 0
    for prompt, chosen, rejected in zip(dpo.prompts, dpo.chosens, dpo.rejects):
        assert prompt.endswith("<|im_start|>assistant\n") and chosen != rejected
        assert chosen.endswith("<|im_end|>") and "<tool_call>" in chosen + rejected
    swift_style = jsonl(out / "dpo" / "swift.jsonl")[0]["messages"]  # JSON-string arguments
    with pytest.raises(TypeError, match="mapping"):  # what Qwen3's and GLM-4-MoE's templates do with them
        tokenizer.apply_chat_template(swift_style, tokenize=False)


def test_swift_rows_keep_reasoning_as_think_in_the_content(exported):
    """ms-swift keeps `role`, `content` and `loss` of a message (its MessagesPreprocessor drops the
    rest; OpenAI `tool_calls` it turns into `tool_call` messages first), and its docs put reasoning
    in the content as `<think>\\n...\\n</think>\\n`."""
    _, out, _, _ = exported
    seen = 0
    for dataset in ("sft", "stuck_slices", "kto"):
        trl_rows = {row["id"]: row for row in jsonl(out / dataset / "trl.jsonl")}
        for row in jsonl(out / dataset / "swift.jsonl"):
            source = trl_rows[row["id"]]
            for ours, theirs in zip(row["messages"], source["prompt"] + source["completion"], strict=True):
                assert "reasoning_content" not in ours and ours["role"] == theirs["role"]
                if theirs.get("reasoning_content"):
                    seen += 1
                    expected = THINK.format(reasoning=theirs["reasoning_content"]) + (theirs["content"] or "")
                    assert ours["content"] == expected and ours["content"].startswith("<think>\n")
                for call in ours.get("tool_calls") or []:
                    assert isinstance(call["function"]["arguments"], str)
            assert isinstance(json.loads(row["tools"]), list)
    assert seen >= 2 and any(REASONING in line for line in (out / "sft" / "swift.jsonl").read_text().splitlines())
    for row in jsonl(out / "dpo" / "swift.jsonl"):  # the whole rejected conversation, not after the last user turn
        assert row["messages"][:-1] == row["rejected_messages"][:-1] != []


@pytest.mark.parametrize("dialect", ["trl", "swift", "openrlhf"])
def test_every_column_has_one_type_in_every_file_of_a_dialect(exported, dialect):
    _, out, _, _ = exported
    files = sorted(out.glob(f"*/{dialect}.parquet"))
    assert len(files) >= 3
    loaded = {path.parent.name: load(out, f"{path.parent.name}/{dialect}", "parquet") for path in files}
    for name, data in loaded.items():
        assert data.features == features(dialect, data.column_names), name
    for first, second in itertools.combinations(loaded, 2):
        both = datasets.concatenate_datasets([loaded[first], loaded[second]])
        assert len(both) == len(loaded[first]) + len(loaded[second])
    if dialect != "swift":
        assert "hint_level" in loaded["sft"].column_names and loaded["sft"].features["hint_level"].dtype == "int64"


def test_the_card_counts_tokens_with_the_tokenizer_and_names_each_trainers_settings(exported, tmp_path):
    store, out, report, tokenizer = exported
    card = (out / "README.md").read_text()
    rows = jsonl(out / "sft" / "trl.jsonl")
    lengths = [
        len(
            tokenizer(tokenizer.apply_chat_template(r["prompt"] + r["completion"], tools=r["tools"], tokenize=False))[
                "input_ids"
            ]
        )
        for r in rows
    ]
    assert f"| `sft/trl` | {len(rows)} | {max(lengths)} | " in card and f"| {sum(lengths)} |" in card
    assert "Tokens: the chat template and tokenizer of" in card and "datasets >= 4.7" in card
    settings = {line.split("`")[1]: line for line in card.splitlines() if line.startswith("- `")}
    assert "assistant_only_loss=True, max_length=None" in settings["sft/trl"]
    assert "max_length=None" in settings["dpo/trl"] and "max_length=None" in settings["kto/trl"]
    assert "--data.input_key messages --data.multiturn --data.apply_chat_template" in settings["sft/openrlhf"]
    assert "--data.input_key input --data.output_key output" in settings["stuck_slices/openrlhf"]
    assert "--data.prompt_key input --data.chosen_key chosen_output" in settings["dpo/openrlhf"]
    assert f"--max_length {report.tokens['sft/swift'].longest} " in settings["sft/swift"]
    labels = report.labels["kto/trl"]
    assert labels[True] and labels[False] and labels[True] + labels[False] == report.rows["kto/trl"]
    assert f"| `kto/trl` | {labels[True]} | {labels[False]} | {kto_weights(labels)[0] or 'balanced'} |" in card

    tokenizer.save_pretrained(tmp_path / "tokenizer")  # a local directory, as `export --tokenizer` takes it
    again = export(store, ["sft"], tmp_path / "again", tokenizer=tmp_path / "tokenizer")
    assert again.tokens["sft/trl"] == report.tokens["sft/trl"]
    rough = export(store, ["sft"], tmp_path / "rough")
    assert "Tokens: approximate: characters" in (tmp_path / "rough" / "README.md").read_text()
    assert rough.tokens["sft/trl"].longest > 0
    with pytest.raises(ConfigError, match="not a local tokenizer directory"):
        export(store, ["sft"], tmp_path / "bad", tokenizer=tmp_path / "nowhere")
