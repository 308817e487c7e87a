import json
import os
import re

import pytest
import yaml

from harnessforge.atomic import atomic_write
from harnessforge.errors import ArtifactError, ConfigError
from harnessforge.models import RepoSpec
from harnessforge.rules import load_rules
from harnessforge.store import Store


def test_default_rules_load_and_hash_is_stable():
    a, b = load_rules(), load_rules()
    assert a.planning.min_lines == 80 and a.planning.max_files == 40 and a.screening.min_tests == 50
    assert a.hash == b.hash and len(a.hash) == 12


def test_override_merges_and_changes_the_hash(tmp_path):
    f = tmp_path / "rules.yaml"
    f.write_text("planning:\n  min_lines: 10\n")
    rules = load_rules(f)
    assert rules.planning.min_lines == 10
    assert rules.planning.max_lines == 2000  # untouched defaults survive
    assert rules.hash != load_rules().hash


def test_rules_from_environment(tmp_path, monkeypatch):
    f = tmp_path / "rules.yaml"
    f.write_text("screening:\n  min_tests: 1\n")
    monkeypatch.setenv("HARNESSFORGE_RULES", str(f))
    assert load_rules().screening.min_tests == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("planning:\n  min_lines: -5\n", "planning.min_lines"),
        ("planning:\n  min_lines: 5000\n", r"min_lines \(5000\) exceeds max_lines"),
        ("planning:\n  nonsense: 1\n", "planning.nonsense"),
        ("planning: [\n", "not valid YAML"),
        ("- a list\n", "must be a mapping"),
    ],
)
def test_invalid_rules_name_the_file_and_field(tmp_path, text, message):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message) as e:
        load_rules(f)
    assert str(f) in str(e.value)


def test_invalid_rules_via_cli(run_cli, tmp_path, example_repo):
    f = tmp_path / "bad.yaml"
    f.write_text("planning:\n  max_files: zero\n")
    proc = run_cli("--rules", str(f), "plan", str(example_repo))
    assert proc.returncode == 1
    assert f"rules file {f}: planning.max_files" in proc.stderr
    assert not (tmp_path / "store" / "repos").exists()


def test_atomic_write_leaves_no_temp_files(tmp_path):
    target = tmp_path / "a" / "b.json"
    atomic_write(target, b"{}")
    atomic_write(target, b'{"x": 1}')
    assert json.loads(target.read_text()) == {"x": 1}
    assert os.listdir(target.parent) == ["b.json"]


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "b.json"
    atomic_write(target, b"old")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ArtifactError, match="b.json: no space left on the device"):  # one CLI line
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["b.json"]


def test_write_model_is_idempotent(tmp_path):
    store = Store(tmp_path)
    spec = RepoSpec(input="o/n", kind="github", url="https://github.com/o/n.git", key="o__n", github="o/n")
    assert store.save_repo(spec) is True
    before = (store.repo_dir("o__n") / "repo.json").stat().st_mtime_ns
    assert store.save_repo(spec) is False
    assert (store.repo_dir("o__n") / "repo.json").stat().st_mtime_ns == before


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "missing"),
        ("{not json", "not valid JSON"),
        ('{"input": "x", "kind": "svn", "url": "x", "key": "o__n"}', "kind: Input should be"),
        ('{"input": "x", "kind": "github", "url": "x"}', "key: Field required"),
    ],
)
def test_read_reports_path_and_field(tmp_path, content, message):
    store = Store(tmp_path)
    path = store.repo_dir("o__n") / "repo.json"
    if content is not None:
        path.parent.mkdir(parents=True)
        path.write_text(content)
    with pytest.raises(ArtifactError, match=message) as e:
        store.load_repo("o__n")
    assert str(path) in str(e.value)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"planning": {"kinds": {"words": {"feature": ["^(add"]}}}}, "kinds pattern for feature '^(add'"),
        ({"planning": {"noise_subjects": ["[bump"]}}, "noise_subjects pattern '[bump'"),
        ({"planning": {"kinds": {"prefixes": {"feat": "new stuff"}}}}, "planning.kinds.prefixes.feat"),
        ({"planning": {"described_seed_share": 2}}, "planning.described_seed_share"),
    ],
)
def test_planning_kind_rules_are_validated(tmp_path, override, message):
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump(override))
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_rules(f)


@pytest.mark.parametrize("run_id", ["../elsewhere", "a/b", "", ".hidden", "x" * 101, "run id"])
def test_a_run_id_that_is_not_one_folder_name_is_refused(tmp_path, run_id):
    with pytest.raises(ConfigError, match="run id"):
        Store(tmp_path).run_dir("acme__app", run_id)
    assert not (tmp_path / "trajectories").exists()


def test_the_cli_refuses_a_bad_run_id_before_any_work(run_cli, tmp_path):
    proc = run_cli("run", "acme__app", "--run-id", "../../etc", store=tmp_path / "store")
    assert proc.returncode != 0 and "run id '../../etc'" in proc.stdout + proc.stderr
    assert not (tmp_path / "store" / "trajectories").exists()


def test_milestone_run_files_and_the_folders_a_user_names(tmp_path):
    store = Store(tmp_path)
    files = store.milestone_run("acme__app", "oracle-1", "m02")
    assert files.summary == tmp_path / "trajectories/acme__app/oracle-1/m02/summary.json"
    assert (files.repo_key, files.run_id, files.milestone_id) == ("acme__app", "oracle-1", "m02")
    assert files.metadata == store.run_metadata("acme__app", "oracle-1")
    assert not files.started() and not files.finished()
    with pytest.raises(ArtifactError, match="not a finished milestone run"):
        Store.of_milestone_run(files.dir)  # no summary yet
    atomic_write(files.summary, b"{}")
    atomic_write(files.trajectory, b"{}\n")
    for seq in (7, 3):
        atomic_write(files.snapshot(seq), b"")
    found, again = Store.of_milestone_run(files.dir)
    assert found.root == store.root and again == files
    assert [seq for seq, _ in files.snapshots()] == [3, 7]
    assert store.milestone_runs() == [files] and store.milestone_runs(finished=True) == [files]
    assert store.has_finished("acme__app", "m02") and not store.has_finished("acme__app", "m01")
    with pytest.raises(ArtifactError, match="not a finished milestone run"):
        Store.of_milestone_run(tmp_path / "elsewhere")
