-- materialization: view
-- One row per recorded event, flattened: what every other model starts from.
SELECT
    repo, run_id, milestone_id, seq, turn_id, ts, role,
    action.type AS action_type,
    action.content AS content,
    action.args AS args,
    call_id, observation, observation_chars, coalesce(ok, TRUE) AS ok,
    mentor_hint, hint_level, files_touched,
    test_status.passed AS tests_passed,
    test_status.failed AS tests_failed,
    test_status.total AS tests_total,
    error_signature, cumulative_edits, cumulative_test_runs, model,
    usage."input" AS tokens_input, usage.cached AS tokens_cached, usage.output AS tokens_output,
    latency_s, cost_usd, synthetic,
    role = 'dev' AND call_id IS NOT NULL AS is_tool,
    -- identical calls compare equal (the tool and its arguments)
    action.type || ' ' || coalesce(CAST(action.args AS VARCHAR), '') AS action_key
FROM raw_events
