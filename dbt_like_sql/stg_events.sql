-- materialization: view
-- One row per recorded event, flattened and compact: what every other model starts from. Long
-- texts stay in raw_events; here an observation is its hash (obs_key, computed at load), a call
-- the hash of the tool and its arguments (action_key), and the argument values models use are
-- columns. `mrun` identifies the milestone run, so windows sort on two integers. A view: each
-- model computes only the columns it reads, straight from the Parquet files.
SELECT
    mrun, repo, run_id, milestone_id, seq, turn_id, ts, role,
    action.type AS action_type,
    role = 'dev' AND call_id IS NOT NULL AS is_tool,
    coalesce(ok, TRUE) AS ok,
    action_key, obs_key,
    hint_level,
    a.rule,
    coalesce(files_touched[1], a.path) AS path,
    a.pattern, a.command, a.content_sha,
    coalesce(a.test_file, FALSE) AS test_file,
    len(files_touched) AS files_touched,
    test_status.passed AS tests_passed,
    test_status.failed AS tests_failed,
    test_status.total AS tests_total,
    error_signature, cumulative_edits, cumulative_test_runs, model,
    usage."input" AS tokens_input, usage.cached AS tokens_cached, usage.output AS tokens_output,
    latency_s, cost_usd, synthetic
FROM (
    SELECT *, json_transform(action.args, '{"rule": "VARCHAR", "path": "VARCHAR", "pattern": "VARCHAR",
        "command": "VARCHAR", "content_sha": "VARCHAR", "test_file": "BOOLEAN"}') AS a  -- one parse per event
    FROM raw_events
)
