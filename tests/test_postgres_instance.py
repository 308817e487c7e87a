"""The Postgres-backed instance of the deploys, on a real PostgreSQL server (tests/postgres.py):
deploy/dagster.yaml's settings with `storage: postgres` load as a DagsterInstance, and a run made
through it is read back from the database by a second, fresh instance."""

from __future__ import annotations

import dagster as dg
import psycopg2
import yaml
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage


@dg.asset
def tiny() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 3})


def test_a_run_is_recorded_in_postgres_and_read_back_by_a_fresh_instance(postgres_instance_dir):
    home = postgres_instance_dir()
    url = yaml.safe_load((home / "dagster.yaml").read_text())["storage"]["postgres"]["postgres_url"]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        result = dg.materialize([tiny], instance=instance)
        assert result.success
        run_id = result.run_id

    with dg.DagsterInstance.from_config(str(home)) as fresh:
        run = fresh.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        materialization = fresh.get_latest_materialization_event(dg.AssetKey("tiny"))
        assert materialization.run_id == run_id
        assert materialization.asset_materialization.metadata["rows"] == dg.IntMetadataValue(3)

    # The rows are in PostgreSQL itself, not in a SQLite file beside dagster.yaml.
    assert not list(home.rglob("*.db"))
    with psycopg2.connect(url.replace("+psycopg2", "")) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,))
        assert cursor.fetchone() == ("SUCCESS",)


def test_each_instance_dir_gets_a_database_of_its_own(postgres_instance_dir, tmp_path):
    first, second = postgres_instance_dir(tmp_path / "a"), postgres_instance_dir(tmp_path / "b")
    with dg.DagsterInstance.from_config(str(first)) as instance:
        assert dg.materialize([tiny], instance=instance).success
    with dg.DagsterInstance.from_config(str(second)) as other:
        assert other.get_runs() == []
