"""benchmarks/corpus.py on example pattern repositories: the yield table has one row per range with
the plan's and validation's numbers, a bad entry is reported and the others still run, and a bad
corpus file or option is one clear line. No Docker: plan, local validation (K=1) and the report."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from harnessforge.examples.patterns import build_pattern
from harnessforge.store import Store

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load_corpus():
    spec = importlib.util.spec_from_file_location("hf_corpus_benchmark", BENCHMARKS / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()
# the modules corpus.py imported from benchmarks/
corpus_baseline = importlib.import_module("corpus_baseline")
corpus_report = importlib.import_module("corpus_report")


@pytest.fixture(scope="module")
def patterns(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus-patterns")
    for name in ("towncrier-apart", "squash-only"):
        build_pattern(name, root / name)
    return root


@pytest.fixture(scope="module")
def measured(patterns, tmp_path_factory):
    """The corpus of two patterns (one validated locally) and an entry whose clone does not exist."""
    entries = [
        corpus.Entry.model_validate({"name": "towncrier-apart", "language": "python"}),
        corpus.Entry.model_validate({"name": "missing", "path": str(patterns / "nowhere"), "language": "go"}),
        corpus.Entry.model_validate({"name": "squash-only", "language": "python", "from": "default"}),
    ]
    from harnessforge.rules import load_rules

    store = Store(tmp_path_factory.mktemp("corpus-store") / "store")
    lines: list[str] = []
    options = corpus.Options(build=False, backend="local", repeats=1, collect=False)
    results = corpus.run_corpus(entries[:2], store, load_rules(), patterns, options, lines.append)
    plan_only = corpus.Options(build=False, backend=None, repeats=1, collect=False)
    results += corpus.run_corpus(entries[2:], store, load_rules(), patterns, plan_only, lines.append)
    doc = corpus.document(results, options, "corpus.py --test", 1.0, note="Test run")
    return results, doc, lines


def test_each_range_has_its_plan_and_validation_numbers(measured):
    results, doc, _ = measured
    towncrier, missing, squash = results
    assert [r.name for r in results] == ["towncrier-apart", "missing", "squash-only"]
    # towncrier-apart: two features from its towncrier fragments, both validated (local sandbox, K=1)
    assert towncrier.milestones == 2 and towncrier.feature_titled == 2
    assert (towncrier.entries_covered, towncrier.entries_citing) == (2, 2)
    why = [(row.id, row.status, row.reason, row.detail) for row in towncrier.rows]
    assert towncrier.validated and towncrier.valid == 2 and towncrier.fail_to_pass > 0, why
    assert not towncrier.errors and towncrier.screen_passed is False  # a tiny repo fails screening; it goes on
    assert all(row.validation_s is not None for row in towncrier.rows)
    assert towncrier.per_valid_s is not None and towncrier.range
    # issue 31: what grades them: each title feature has a graded test of its own, nothing is collateral
    assert towncrier.acceptance == {
        "fail_to_pass": towncrier.fail_to_pass,
        "collateral_set_aside": 0,
        "collateral_graded": 0,
        "headlines": 2,
        "headlines_covered": 2,
        "weak": 0,
        "merged": 0,
        "untested_in_chain": 0,
        "untested_tail": 0,
    }
    # squash-only: planned only (no validation backend): no change log, four milestones from squash messages
    assert squash.milestones == 4 and squash.entries_citing == 0 and not squash.validated
    assert squash.type_mix == {"feature": 2, "bug fix": 1, "refactor": 1}
    assert [row.status for row in squash.rows] == ["not validated"] * 4
    assert doc["totals"]["all"]["milestones"] == 6 and doc["totals"]["python"]["valid"] == 2


def test_a_bad_entry_is_reported_and_the_others_still_run(measured):
    results, doc, lines = measured
    missing = results[1]
    assert set(missing.errors) == {"clone"} and "no local clone at" in missing.errors["clone"]
    assert missing.milestones == 0 and not missing.rows
    assert any(line.startswith("missing: clone failed: FileNotFoundError: no local clone at") for line in lines)
    assert not any("Traceback" in line for line in lines)
    assert doc["totals"]["all"]["failed_entries"] == 1
    assert results[2].milestones == 4  # planned after the bad entry


def test_the_table_has_one_row_per_range_and_the_targets(measured):
    _, doc, _ = measured
    text = corpus.markdown(doc)
    rows = [ln for ln in text.split("## Totals")[0].splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == ["towncrier-apart", "missing", "squash-only"]
    assert " | 2 | feature 2 | 2/2 (100%) | 2/2 (100%) | 2/2 | " in rows[0]
    assert "clone: FileNotFoundError: no local clone at" in rows[1]
    assert "not run" in rows[2] and "feature 2, bug fix 1, refactor 1" in rows[2]
    assert "> **Test run**" in text and "## Targets (issues 16, 30 and 31)" in text
    assert "| towncrier-apart | " in text.split("## Acceptance tests (issue 31)")[1].split("## Targets")[0]
    targets = {t["target"]: t for t in doc["targets"]}
    assert targets[">= 90% of milestones titled by features"]["met"] is True
    assert targets[">= 60% of python milestones valid"]["measured"] == "2/6 (33%)"
    assert targets[">= 60% of python milestones valid"]["met"] is False
    assert targets[">= 50% of go milestones valid"]["met"] is None  # the Go entry never planned: nothing to judge
    coherent = targets[">= 80% of milestones coherent: one feature, or features sharing code (issue 31)"]
    assert coherent["measured"] == "6/6 (100%)" and coherent["met"] is True
    turns = targets["median expected Dev turns within 15-50 (issue 31)"]
    assert turns["measured"].endswith("of 6 milestones within)") and turns["met"] is not None
    untested = targets["0 milestones in a chain without a FAIL_TO_PASS test (issue 31)"]
    assert untested["measured"].startswith("0; 0 merged") and untested["met"] is True
    json.dumps(doc, default=str)  # the --json output


def test_a_rewrite_keeps_the_review_a_person_wrote(measured):
    _, doc, _ = measured
    text = corpus.markdown(doc)
    previous = "# Old\n\n## Totals\nold numbers\n\n## Review (2026-12-03)\n| m01 | 1 |\n\n## Notes\nold\n"
    kept = corpus_report.keeping_reviews(text, previous)
    assert kept.startswith(text.rstrip("\n")) and kept.endswith("\n\n## Review (2026-12-03)\n| m01 | 1 |\n")
    assert "old numbers" not in kept and "## Notes" not in kept
    assert corpus_report.keeping_reviews(text, "") == text


def test_the_shipped_corpus_has_twelve_ranges_over_four_languages():
    entries = corpus.load_entries(BENCHMARKS / "corpus.yaml")
    assert len(entries) >= 12
    assert {e.group for e in entries} >= {"python", "go", "typescript", "rust"}
    assert all(e.repo and "/" in e.repo for e in entries)
    assert next(e for e in entries if e.name == "pflag").to_ref == "v1.0.10"  # quoted: not the number 1.1


@pytest.mark.parametrize(
    "text, error",
    [
        ("entries: [{name: a, language: cobol}]", "entry 1: language: Input should be"),
        ("entries: [{name: a, language: go, form: v1}]", "entry 1: form: Extra inputs are not permitted"),
        ("entries: [{name: a, language: go}, {name: a, language: go}]", "repeated: a"),
        ("entries: {", "not YAML"),
        ("entries: []", "expected a list of entries"),
    ],
)
def test_a_bad_corpus_file_is_one_clear_line(tmp_path, capsys, text, error):
    path = tmp_path / "corpus.yaml"
    path.write_text(text)
    code = corpus.main(["--repos", str(path), "--store", str(tmp_path / "s"), "--out", str(tmp_path / "o.md")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {path}: ") and error in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.md").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "args, error",
    [
        (["--only", "nope"], "--only: no entry named nope"),
        (["--only", "flask", "--baseline", "pluggy"], "--baseline pluggy: not selected by --only"),
        (["--baseline", "pluggy", "--no-docker"], "--baseline needs Docker"),
        (["--repeats", "0"], "--repeats must be at least 1"),
    ],
)
def test_a_bad_option_is_one_clear_line(tmp_path, capsys, args, error):
    base = ["--repos", str(BENCHMARKS / "corpus.yaml"), "--store", str(tmp_path / "s"), "--out", str(tmp_path / "o.md")]
    assert corpus.main(base + args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {error}") and len(err.splitlines()) == 1
    assert not (tmp_path / "o.md").exists()


def test_the_per_instance_baseline_agrees_with_ours_and_leaves_no_image(tmp_path):
    """Docker: the go-module pattern built under a fresh tag, validated (K=1), then its milestone built
    the per-instance way from a Dockerfile and run in fresh containers: the same FAIL_TO_PASS as ours."""
    import docker

    from harnessforge.rules import load_rules

    build_pattern("go-module", tmp_path / "go-module")
    entry = corpus.Entry.model_validate({"name": "go-module", "language": "go"})
    # Two workers asked for: a baseline entry still validates with one, so its seconds are known.
    options = corpus.Options(repeats=1, workers=2, collect=False, baseline=("go-module",), baseline_milestones=1)
    lines: list[str] = []
    # its two small features (sharing no file) as one milestone, as before issue 31: one image to compare, not two
    rules = load_rules()
    rules = rules.model_copy(update={"planning": rules.planning.model_copy(update={"related_features_only": False})})
    (result,) = corpus.run_corpus([entry], Store(tmp_path / "store"), rules, tmp_path, options, lines.append)
    assert ".fresh" in result.key and result.images_built == 1 and result.valid == 1, result.errors
    b = result.baseline
    (m01,) = b["milestones"]
    assert m01["status"] == "valid" and m01["same_fail_to_pass"] and m01["fail_to_pass"] == 6, m01
    assert m01["build_s"] > 0 and m01["base_runs_s"] > 0 and m01["verify_runs_s"] > 0
    assert b["ours_validation_timed"] and b["milestones"][0]["ours_validation_s"] > 0
    assert b["ours_valid"] == b["baseline_valid"] == 1 and b["speedup"] == pytest.approx(
        b["baseline_per_valid_s"] / b["ours_per_valid_s"], rel=0.01
    )
    client = docker.from_env()
    assert not client.images.list(name=f"harnessforge/{result.key.lower()}")  # ours, under the fresh tag
    assert not client.images.list(name=f"harnessforge-baseline/{result.key.lower()}")
    text = corpus.markdown(corpus.document([result], options, "corpus.py --test", 1.0))
    assert "## Per-instance baseline" in text and "| go-module | m01 | valid (6 F2P) | valid (6 F2P) |" in text


def test_a_comparison_without_our_validation_seconds_gives_no_speed_up():
    """Ours would be image builds alone, so no ratio is claimed (a run with several workers once did)."""
    row = {"ours_status": "valid", "ours_image": "e1", "ours_image_build_s": 1.0, "status": "valid", "total_s": 40.0}
    timed = {"bundle_s": 0.0, "milestones": [{**row, "ours_validation_s": 9.0}]}
    untimed = {"bundle_s": 0.0, "milestones": [{**row, "ours_validation_s": None}]}
    corpus_baseline.compare_seconds(timed)
    corpus_baseline.compare_seconds(untimed)
    assert timed["speedup"] == pytest.approx(4.0) and timed["ours_validation_timed"]
    assert untimed["speedup"] is None and untimed["speedup_per_milestone"] is None
    assert not untimed["ours_validation_timed"]


def test_a_validation_that_stops_midway_keeps_the_verdicts_saved_before(patterns, tmp_path, monkeypatch):
    from harnessforge.rules import load_rules

    real = corpus.validate_milestones

    def first_then_crash(store, key, rules, **kwargs):
        real(store, key, rules, milestone="m01", **kwargs)
        raise RuntimeError("the Docker engine went away")

    monkeypatch.setattr(corpus, "validate_milestones", first_then_crash)
    entry = corpus.Entry.model_validate({"name": "towncrier-apart", "language": "python"})
    options = corpus.Options(build=False, backend="local", repeats=1, collect=False)
    lines: list[str] = []
    (result,) = corpus.run_corpus([entry], Store(tmp_path / "store"), load_rules(), patterns, options, lines.append)
    assert result.errors == {"validate": "RuntimeError: the Docker engine went away"}
    assert [(row.id, row.status) for row in result.rows] == [("m01", "valid"), ("m02", "not validated")]
    assert result.valid == 1 and result.not_valid == {"not validated": 1}
    assert "towncrier-apart: validate: kept the 1 verdict(s) saved before it stopped" in lines
