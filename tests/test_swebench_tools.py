"""The SWE-bench export run through swebench 5.x's own code, on the files as `export` wrote them:
`make_test_spec` on every instance, `swebench dataset check` / `dataset build` on the task repo, and a
gold evaluation by swebench's harness (`run_instances`: its container, patch chain, eval script, log
parser and grading) in our Docker engine, on images built from the export's Dockerfiles."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import uuid

import pytest

from harnessforge.export.swebench import graded_ids, instance, reported_id, valid_milestones
from harnessforge.export.swebench_repo import write_task_repo
from harnessforge.rules import load_rules
from harnessforge.store import Store
from tests.conftest import BIN, REQUIRE_DOCKER

try:
    import swebench  # noqa: F401

    MISSING = None
except ImportError as e:
    MISSING = f"swebench is not installed ({e}); `pip install -e '.[dev]'` installs it"


@pytest.fixture(scope="module", autouse=True)
def swebench_installed():
    if MISSING:
        if REQUIRE_DOCKER:
            pytest.fail(f"HARNESSFORGE_REQUIRE_DOCKER=1 but {MISSING}")
        pytest.skip(MISSING)


@pytest.fixture(scope="module")
def exported(validated, tmp_path_factory):
    """Every valid milestone of the validated example store (a copy: the fixture is shared) written as a
    SWE-bench task repo. `export` writes only the verified tasks (tests/test_run_chain.py covers that
    choice); this file tests the format on all five."""
    source, key, validations = validated
    root = tmp_path_factory.mktemp("swebench")
    store = Store(shutil.copytree(source.root, root / "store", symlinks=True))
    written = write_task_repo(store, valid_milestones(store), root / "out" / "swebench", load_rules())
    return store, key, validations, root / "out" / "swebench", written


def rows(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "instances.jsonl").read_text().splitlines()]


def report_of(logs, model: str, instance_id: str) -> dict:
    """swebench's report.json of one instance; when it wrote none, its own log says why."""
    folder = logs / model / instance_id
    assert (folder / "report.json").exists(), (folder / "run_instance.log").read_text()[-3000:]
    return json.loads((folder / "report.json").read_text())[instance_id]


def test_every_instance_makes_a_test_spec_the_same_from_the_jsonl_and_the_task_repo(exported):
    from swebench.harness.constants import END_TEST_OUTPUT, TEST_EXIT_CODE_VAR, EvalType
    from swebench.harness.log_parsers import PARSER_REGISTRY
    from swebench.harness.utils import load_swebench_dataset, make_test_spec
    from swebench.task.checks import expected_image
    from swebench.task.repo import load_task_repo

    store, key, validations, folder, report = exported
    valid = [mid for mid, validation in validations.items() if validation.status == "valid"]
    assert report.instances == len(valid) == 5 and not report.left_out
    from_jsonl = [make_test_spec(row) for row in load_swebench_dataset(str(folder / "instances.jsonl"))]
    from_tree = [make_test_spec(task) for task in load_task_repo(folder)]
    assert from_jsonl == from_tree  # one instance, whichever file a harness reads
    assert [spec.instance_id for spec in from_tree] == [f"{key}-{mid}" for mid in valid]
    for spec in from_tree:
        assert spec.image == expected_image(spec.instance_id)
        assert spec.log_parser in PARSER_REGISTRY and EvalType(spec.eval_type) is EvalType.PASS_AND_FAIL
        assert spec.FAIL_TO_PASS and spec.PASS_TO_PASS
        # swebench found the test command: it records its exit status right before the end marker
        end = next(i for i, line in enumerate(spec.eval_script_list) if END_TEST_OUTPUT in line)
        assert spec.eval_script_list[end - 1] == f"{TEST_EXIT_CODE_VAR}=$?"
        assert spec.eval_script_list[end - 2].startswith("python -m pytest -rA ")


def test_swebench_dataset_check_finds_nothing_and_dataset_build_compiles_it(exported, tmp_path):
    from swebench.harness.utils import load_swebench_dataset, make_test_spec
    from swebench.task.checks import check_task_repo

    _, _, _, folder, _ = exported
    checked = subprocess.run([str(BIN / "swebench"), "dataset", "check", str(folder)], capture_output=True, text=True)
    assert checked.returncode == 0 and "looks well formed" in checked.stdout, checked.stdout + checked.stderr
    assert check_task_repo(folder) == []  # no warning either
    built = subprocess.run(
        [str(BIN / "swebench"), "dataset", "build", str(folder), "-o", str(tmp_path)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout + built.stderr
    published = load_swebench_dataset(str(tmp_path / "milestones" / "test.parquet"))
    assert sorted(make_test_spec(row).instance_id for row in published) == sorted(
        r["instance_id"] for r in rows(folder)
    )


def test_ids_are_stored_as_swebench_parser_reports_them_and_harbor_keeps_the_real_ones(exported):
    from swebench.harness.log_parsers import PARSER_REGISTRY
    from swebench.harness.utils import make_test_spec

    store, key, validations, folder, _ = exported
    renamed = 0
    for row in rows(folder):
        spec = make_test_spec(row)
        validation = validations[row["milestone_id"]]
        real = validation.fail_to_pass + validation.pass_to_pass
        log = "\n".join(f"PASSED {test_id}" for test_id in real)  # the lines pytest -rA prints
        assert sorted(PARSER_REGISTRY[spec.log_parser](log, spec)) == sorted(spec.FAIL_TO_PASS + spec.PASS_TO_PASS)
        assert spec.FAIL_TO_PASS == [reported_id(test_id, spec.log_parser) for test_id in validation.fail_to_pass]
        renamed += sum(stored != test_id for stored, test_id in zip(spec.FAIL_TO_PASS, validation.fail_to_pass))
        harbor = instance(store, key, row["milestone_id"])  # tests/config.json of the Harbor task
        assert json.loads(harbor["FAIL_TO_PASS"]) == validation.fail_to_pass
        assert json.loads(harbor["PASS_TO_PASS"]) == validation.pass_to_pass
    assert renamed  # the example has parametrised ids with spaces (`[  ]`, `[two words]`)


@pytest.mark.parametrize("log_parser", ["parse_log_pytest_v2", "parse_log_pytest"])
def test_reported_ids_are_what_each_pytest_parser_reads_and_clashing_ids_are_left_ungraded(log_parser):
    from swebench.harness.log_parsers import PARSER_REGISTRY

    ids = [
        "t.py::a[   ]",
        "t.py::a[not json]",
        't.py::a[{"format": 99}]',
        "t.py::a[[]]",
        "t.py::a[x - y]",
        "t.py::a[\\t\\n]",
        "t.py::a[\x1b[1mbold\x1b[0m]",
        "t.py::Class::test_b",
    ]
    for test_id in ids:
        for status in ("PASSED", "FAILED"):
            parsed = PARSER_REGISTRY[log_parser](f"{status} {test_id}", None)
            if status == "PASSED" or " - " not in test_id:  # a FAILED line's " - " starts its message
                assert list(parsed) == [reported_id(test_id, log_parser)], (test_id, status)
    graded = graded_ids(["t.py::a[x  y]", "t.py::b"], ["t.py::a[x y]", "t.py::c"], log_parser)
    assert graded.ambiguous == ["t.py::a[x  y]", "t.py::a[x y]"]  # one log line could be either
    assert (graded.fail_to_pass, graded.pass_to_pass) == (["t.py::b"], ["t.py::c"])


def test_gold_patches_resolve_every_instance_in_swebench_harness(exported, docker_client, tmp_path):
    """Each instance image from its exported Dockerfile, the environment layers taken from the
    milestone's env image (same recipe, built by the fixtures; no registry), the rest as written."""
    from swebench.harness.constants import RUN_EVALUATION_LOG_DIR, ResolvedStatus
    from swebench.harness.grading import get_eval_report, get_resolution_status
    from swebench.harness.run_evaluation import run_instances
    from swebench.harness.utils import get_predictions_from_file, make_test_spec
    from swebench.task.repo import load_task_repo

    store, key, _, folder, _ = exported
    images = store.load_images(key)
    tasks = load_task_repo(folder)
    built, run = [], f"hf-{uuid.uuid4().hex[:8]}"
    try:
        for task in tasks:
            context = shutil.copytree(folder / "tasks" / task["instance_id"], tmp_path / "build" / task["instance_id"])
            lines = (context / "Dockerfile").read_text().splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith("COPY repo.bundle"))
            env_image = images.for_milestone(task["milestone_id"]).tag
            (context / "Dockerfile").write_text("\n".join([f"FROM {env_image}", "USER root", *lines[start:]]) + "\n")
            tag = f"harnessforge-swebench-test/{task['instance_id'].lower()}:{run}"
            docker_client.images.build(
                path=str(context), tag=tag, network_mode="none", rm=True, forcerm=True, labels={"harnessforge": run}
            )
            built.append(tag)
            task["image"] = tag  # our tag, not the published name: nothing of anyone else's is touched
        gold = {p["instance_id"]: p for p in get_predictions_from_file("gold", "", "test", task_repo=str(folder))}
        empty = {task["instance_id"]: {**gold[task["instance_id"]], "model_name_or_path": "empty"} for task in tasks}
        with contextlib.chdir(tmp_path):  # swebench writes its logs under ./logs
            run_instances(gold, tasks, max_workers=len(tasks), run_id=run, timeout=600)
            run_instances(empty, tasks[:1], max_workers=1, run_id=run, timeout=600, skip_patch=True)
    finally:
        for tag in built:
            docker_client.images.remove(tag, force=True)
    logs = tmp_path / RUN_EVALUATION_LOG_DIR / run
    for task in tasks:
        instance_id = task["instance_id"]
        report = report_of(logs, "gold", instance_id)
        statuses = report.get("tests_status")
        assert report["resolved"] and get_resolution_status(statuses) == ResolvedStatus.FULL.value, (
            instance_id,
            statuses or (logs / "gold" / instance_id / "test_output.txt").read_text()[-3000:],
        )
        assert statuses["FAIL_TO_PASS"]["success"] == task["FAIL_TO_PASS"] and not statuses["FAIL_TO_PASS"]["failure"]
        assert statuses["PASS_TO_PASS"]["success"] == task["PASS_TO_PASS"] and not statuses["PASS_TO_PASS"]["failure"]
    # graded against the ids as pytest wrote them (Harbor's copy), the same gold log does not resolve
    first = tasks[0]["instance_id"]
    harbor = instance(store, key, tasks[0]["milestone_id"])
    as_written = make_test_spec(
        {**tasks[0], "FAIL_TO_PASS": harbor["FAIL_TO_PASS"], "PASS_TO_PASS": harbor["PASS_TO_PASS"]}
    )
    log = str(logs / "gold" / first / "test_output.txt")
    assert get_eval_report(as_written, gold[first], log, include_tests_status=False)[first]["resolved"] is False
    # without the gold patch the same eval script fails the instance: the grading is not vacuous
    assert report_of(logs, "empty", first)["resolved"] is False
