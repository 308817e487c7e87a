"""Exports: every row loads back with `datasets`, renders through a Hugging Face chat template the
way TRL applies it, and synthetic or rejected runs stay out unless allowed."""

import json

import datasets
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import PreTrainedTokenizerFast

from harnessforge.distill import distill
from harnessforge.distill.outputs import DPO_PAIRS, REVIEWS, read_distilled
from harnessforge.errors import ArtifactError, ConfigError
from harnessforge.export import export
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.test_analytics import craft, explore
from tests.test_distill import craft_more
from tests.trajectories import CraftedRun

# A Qwen2.5-style tool template: tools listed in the system turn, calls as JSON objects, results as
# tool responses, assistant text inside {% generation %} so assistant-only loss masks can be taken.
TEMPLATE = """{%- for m in messages -%}
{%- if m.role == 'system' -%}<|system|>{{ m.content }}
{%- if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif -%}
{%- elif m.role == 'assistant' -%}<|assistant|>{% generation %}{{ m.content }}{%- for c in m.tool_calls or [] -%}
<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>
{%- endfor %}{% endgeneration %}
{%- elif m.role == 'tool' -%}<|tool|>{{ m.content }}
{%- else -%}<|{{ m.role }}|>{{ m.content }}{%- endif -%}
{%- endfor -%}"""


@pytest.fixture(scope="module")
def tokenizer():
    model = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    model.pre_tokenizer = Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=model, unk_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    store = Store(root / "store")
    craft(store)
    craft_more(store)
    explore(CraftedRun(store, "oracle-run", synthetic=True)).say().edit().say().test(1, 0).finish("PASS")
    distill(store, load_rules(), log=lambda *_: None)
    report = export(store, ["all"], root / "out")
    return store, root / "out", report


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_file_loads_back_with_datasets_exactly(exported):
    _, out, report = exported
    parquets = [path for path in report.files if path.suffix == ".parquet"]
    assert {path.relative_to(out).as_posix() for path in parquets} >= {
        "sft/trl.parquet",
        "sft/swift.parquet",
        "sft/openrlhf.parquet",
        "stuck_slices/trl.parquet",
        "dpo/trl.parquet",
        "dpo/swift.parquet",
        "dpo/openrlhf.parquet",
        "kto/trl.parquet",
        "kto/swift.parquet",
    }
    for parquet in parquets:
        loaded = datasets.load_dataset("parquet", data_files=str(parquet), split="train")
        assert loaded.to_list() == jsonl(parquet.with_suffix(".jsonl")), parquet


def test_trl_rows_render_through_a_chat_template_with_tools(exported, tokenizer):
    _, out, _ = exported
    for row in jsonl(out / "dpo" / "trl.jsonl"):
        assert len(row["chosen"]) == len(row["rejected"]) == 1 and row["chosen"][0]["role"] == "assistant"
        for side in ("chosen", "rejected"):
            text = tokenizer.apply_chat_template(row["prompt"] + row[side], tools=row["tools"], tokenize=False)
            for call in row[side][0].get("tool_calls") or []:
                assert isinstance(call["function"]["arguments"], dict)
                assert json.dumps(call["function"]["arguments"]) in text
    for row in jsonl(out / "sft" / "trl.jsonl"):
        rendered = tokenizer.apply_chat_template(
            row["prompt"] + row["completion"],
            tools=row["tools"],
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        assert any(rendered["assistant_masks"])  # the completion has assistant tokens to train on
    kto = jsonl(out / "kto" / "trl.jsonl")
    assert {row["label"] for row in kto} == {True, False}


def test_dialects(exported):
    _, out, _ = exported
    swift = jsonl(out / "sft" / "swift.jsonl")
    phase = next(row for row in swift if row["kind"] == "implement")
    losses = [message.get("loss") for message in phase["messages"] if message["role"] == "assistant"]
    assert False in losses and losses[-1] is True  # context turns are not trained
    assert isinstance(json.loads(swift[0]["tools"]), list)
    call = next(call for row in swift for message in row["messages"] for call in message.get("tool_calls") or [])
    assert isinstance(call["function"]["arguments"], str)
    dpo_swift = jsonl(out / "dpo" / "swift.jsonl")[0]
    chosen, rejected = dpo_swift["messages"], dpo_swift["rejected_messages"]  # whole conversations, one prefix
    assert chosen[:-1] == rejected[:-1] and chosen[-1] != rejected[-1] and rejected[-1]["role"] == "assistant"
    rlhf = jsonl(out / "dpo" / "openrlhf.jsonl")[0]
    assert rlhf["input"][0]["role"] == "system" and '"name": "read_file"' in rlhf["input"][0]["content"]


def test_synthetic_and_rejected_runs_stay_out_unless_allowed(exported, tmp_path):
    store, out, report = exported
    runs = {row["run_id"] for row in jsonl(out / "sft" / "trl.jsonl")}
    assert "oracle-run" not in runs and not any(row["synthetic"] for row in jsonl(out / "sft" / "trl.jsonl"))
    assert report.refused_synthetic["sft"] == 3  # the oracle run as a whole, its explore and implement phases
    assert {"memorisation", "git_history_probe"}.isdisjoint(runs)
    assert report.discarded["sft"] > 0
    card = (out / "README.md").read_text()
    assert "synthetic rows (the offline oracle's runs) refused: " in card and "| `dpo/trl` |" in card
    assert "| highest hint level | runs |" in card and "| 5 | 0 |" in card  # none changed direction twice
    allowed = export(store, ["sft"], tmp_path / "with", allow_synthetic=True)
    assert not allowed.refused_synthetic
    assert "oracle-run" in {row["run_id"] for row in jsonl(tmp_path / "with" / "sft" / "trl.jsonl")}


def test_atif_and_bad_requests(exported, tmp_path):
    store, out, report = exported
    assert report.rows["atif"] == 0  # crafted runs have no ATIF file; real runs do (see the chain test)
    with pytest.raises(ConfigError, match="unknown export format"):
        export(store, ["csv"], tmp_path / "x")
    with pytest.raises(ArtifactError, match="run `harnessforge distill` first"):
        export(Store(tmp_path / "empty"), ["sft"], tmp_path / "y")


def test_a_rejected_run_feeds_only_what_the_gates_table_allows(exported, tmp_path):
    """distill.gates: an agent loop (`stuck`) keeps its KTO negatives and the rejected side of pairs (its only stuck
    slice was never resolved: no SFT file imitates it); cheating (`git_history_probe`) and memorisation give nothing;
    the card counts per reason."""
    store, out, report = exported
    kto = jsonl(out / "kto" / "trl.jsonl")
    stuck_kto = [row for row in kto if row["run_id"] == "stuck"]
    assert stuck_kto and not any(row["label"] for row in stuck_kto)  # negatives only
    assert "stuck" not in {row["run_id"] for row in jsonl(out / "stuck_slices" / "trl.jsonl")}
    every_row = [row for path in out.rglob("*.jsonl") if path.parent.name != "swebench" for row in jsonl(path)]
    assert not {"git_history_probe", "memorisation"} & {row["run_id"] for row in every_row}
    dpo = jsonl(out / "dpo" / "trl.jsonl")
    assert dpo and "stuck" not in {row["run_id"] for row in dpo}  # never the chosen side...
    pairs = [pair for pair in read_distilled(store, DPO_PAIRS) if pair.rejected_provenance.run_id == "stuck"]
    assert {pair.id for pair in pairs} & {row["id"] for row in dpo}  # ...but the rejected one
    assert report.discarded_for["cheating"] > 0 and report.discarded_for["suspected_memorisation"] > 0
    card = (out / "README.md").read_text()
    assert f"  - for cheating: {report.discarded_for['cheating']}" in card

    strict = load_rules()
    gates = dict(strict.distill.gates) | {"agent_loop": []}
    strict = strict.model_copy(update={"distill": strict.distill.model_copy(update={"gates": gates})})
    export(store, ["kto"], tmp_path / "strict", rules=strict)
    assert "stuck" not in {row["run_id"] for row in jsonl(tmp_path / "strict" / "kto" / "trl.jsonl")}


def test_a_run_that_lost_its_sandbox_is_an_env_issue_and_feeds_nothing(tmp_path):
    store = Store(tmp_path / "store")
    explore(CraftedRun(store, "lost")).say().edit().test(1, 2).finish("ENV_ERROR")
    distill(store, load_rules(), log=lambda *_: None)
    (review,) = read_distilled(store, REVIEWS)
    assert review.status == "ENV_ERROR" and "env_issue" in review.discard_reasons and review.rl_value == "reject"
    report = export(store, ["all"], tmp_path / "out")
    assert report.discarded_for["env_issue"] == sum(report.discarded.values()) > 0


def test_held_out_repositories_get_their_own_split_in_every_format(tmp_path):
    """A listed repository's rows are only under heldout/ (same layout, `split: heldout`); the rest stay
    in the training files; the hash fraction is stable and covers every repository at 1.0."""
    from harnessforge.export.splits import split_of
    from harnessforge.rules import HeldoutRules

    store = Store(tmp_path / "store")
    for repo in ("acme__app", "acme__other"):
        run = explore(CraftedRun(store, f"run-{repo}", repo=repo))
        run.say().edit(sha="e1").say().test(0, 1).say().edit(sha="e2").say().test(1, 0).finish("PASS")
    rules = load_rules()
    held = rules.export.model_copy(update={"heldout": HeldoutRules(repos=["acme/other"], fraction=0.0)})
    rules = rules.model_copy(update={"export": held})
    distill(store, rules, log=lambda *_: None)
    report = export(store, ["sft", "kto"], tmp_path / "out", rules=rules)
    out = tmp_path / "out"
    assert report.heldout_repos == ["acme__other"]
    train, heldout = jsonl(out / "sft" / "trl.jsonl"), jsonl(out / "heldout" / "sft" / "trl.jsonl")
    assert {row["repo"] for row in train} == {"acme__app"} and {row["split"] for row in train} == {"train"}
    assert {row["repo"] for row in heldout} == {"acme__other"} and {row["split"] for row in heldout} == {"heldout"}
    assert report.rows["heldout/sft/trl"] == len(heldout) and report.rows["sft/trl"] == len(train)
    assert (out / "heldout" / "sft" / "trl.parquet").exists() and (out / "heldout" / "kto" / "swift.jsonl").exists()
    one = datasets.load_dataset("parquet", data_files=str(out / "sft" / "trl.parquet"), split="train")
    other = datasets.load_dataset("parquet", data_files=str(out / "heldout" / "sft" / "trl.parquet"), split="train")
    assert len(datasets.concatenate_datasets([one, other])) == len(train) + len(heldout)  # one type per column
    card = (out / "README.md").read_text()
    assert "Held out (`split: heldout`, under `heldout/` in the same layout): acme__other." in card
    assert "| `heldout/sft/trl` |" in card
    # by hash: stable, and a fraction of 1 holds out everything, 0 nothing
    assert split_of("acme__app", HeldoutRules(fraction=1.0)) == "heldout"
    assert split_of("acme__app", HeldoutRules(fraction=0.0)) == "train"
    shares = [split_of(f"owner__repo{i}", HeldoutRules(fraction=0.25)) for i in range(400)]
    assert 60 < shares.count("heldout") < 140 and shares == [
        split_of(f"owner__repo{i}", HeldoutRules(fraction=0.25)) for i in range(400)
    ]


def test_format_checks_name_each_file_a_tool_cannot_load(exported, tmp_path):
    """PoC criterion 4 at export time: a Parquet file datasets cannot read, or one that lost rows, and a
    SWE-bench row make_test_spec cannot use, each fail with the reason."""
    import shutil

    from harnessforge.export.format_checks import format_checks

    store, out, report = exported
    assert report.format_checks and not any(report.format_checks.values()), report.format_checks
    assert json.loads((out / "format_checks.json").read_text()) == report.format_checks
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    (broken / "dpo" / "trl.parquet").write_bytes(b"not parquet")
    (broken / "sft" / "trl.jsonl").write_text((broken / "sft" / "trl.jsonl").read_text() + '{"id": "extra"}\n')
    (broken / "swebench").mkdir(exist_ok=True)
    (broken / "swebench" / "instances.jsonl").write_text('{"instance_id": "x-1", "repo": "a/b"}\n')
    files = [path for path in broken.rglob("*") if path.is_file()]
    checks = format_checks(broken, files)
    assert checks["dpo/trl.parquet"].startswith("datasets cannot load it")
    assert "rows, its JSON lines have" in checks["sft/trl.parquet"]
    assert checks["swebench/instances.jsonl"].startswith("make_test_spec: ")
    assert checks["kto/trl.parquet"] is None


def test_an_export_is_swapped_in_whole_and_never_mixes_with_a_folder_it_did_not_write(exported, tmp_path):
    """Issue 32: `export` into a non-empty folder mixed with what was there, and a failure left half a dataset."""
    store, _, _ = exported
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"not a dataset")
    with pytest.raises(ArtifactError, match=r"photos: not empty and no earlier export; .* or --force"):
        export(store, ["sft"], foreign)
    assert [path.name for path in foreign.iterdir()] == ["holiday.jpg"]
    out = tmp_path / "out"
    first = export(store, ["all"], out)
    (out / "left-over.txt").write_text("from an earlier export")
    again = export(store, ["sft"], out)  # an earlier export is replaced whole
    assert not (out / "left-over.txt").exists() and not (out / "dpo").exists() and (out / "sft").is_dir()
    assert all(path.exists() for path in again.files) and all(str(path).startswith(str(out)) for path in again.files)
    assert len(first.files) > len(again.files)
    before = sorted(path.relative_to(out) for path in out.rglob("*"))
    with pytest.raises(ConfigError):  # a failure leaves the earlier export as it was, and nothing beside it
        export(store, ["csv"], out)
    assert sorted(path.relative_to(out) for path in out.rglob("*")) == before
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".out.")] == []
    forced = export(store, ["sft"], foreign, force=True)
    assert not (foreign / "holiday.jpg").exists() and forced.files


def test_the_folder_is_a_hub_dataset_one_config_per_file_family_and_dialect(exported):
    """Issue 33: `load_dataset(<export dir>)` returned a `test` split of 2 rows of task metadata (no `configs:` in the
    card). The card's front matter declares a config per family and dialect; each loads exactly its file's rows."""
    from huggingface_hub import DatasetCard

    _, out, report = exported
    card = DatasetCard.load(out / "README.md")
    configs = {config["config_name"]: config for config in card.data.configs}
    with_rows = {name for name, count in report.rows.items() if count and "/" in name and name.count("/") == 1}
    expected = {
        name.replace("/", "-")
        for name in with_rows
        if name.split("/")[0] in ("sft", "stuck_slices", "chains", "dpo", "kto")
    }
    assert set(configs) == expected and {"sft-trl", "dpo-swift", "kto-trl", "stuck_slices-openrlhf"} <= set(configs)
    for name in sorted(configs):
        loaded = datasets.load_dataset(str(out), name, cache_dir=str(out.parent / "hf-cache"))  # not a stale cache
        assert list(loaded) == ["train"], name
        family, dialect = name.split("-")
        assert loaded["train"].to_list() == jsonl(out / family / f"{dialect}.jsonl"), name
    assert card.data.task_categories == ["text-generation"] and card.data.size_categories == ["n<1K"]
    # crafted runs of a repository the store has no clone of: no license to read, said, and `other`
    assert card.data.license == "other" and report.warnings
    assert all("no license identified" in warning for warning in report.warnings)


def test_the_card_carries_the_repositories_license(planned, tmp_path):
    """The example repository is MIT licensed (its LICENSE file): the card says `mit`, with no warning; a second
    repository under another license makes it `other`, naming each."""
    from harnessforge.export.hub import front_matter, repository_license

    store, result = planned
    key = result.plan.repo.key
    assert repository_license(store, key) == "MIT"
    front, warnings = front_matter(store, tmp_path, {}, [key])
    assert "license: mit\n" in front and warnings == []
    front, warnings = front_matter(store, tmp_path, {}, [key, "acme__unplanned"])
    assert "license: other\n" in front and "license_details: 'acme__unplanned: unknown; " in front.replace('"', "'")
    assert warnings == ["acme__unplanned: no license identified in its license files; the dataset card says `other`"]
