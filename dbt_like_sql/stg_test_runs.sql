-- materialization: view
-- The Dev's test runs, numbered per milestone run, each with the one before it.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, seq
SELECT
    mrun, repo, run_id, milestone_id, seq, turn_id,
    tests_passed, tests_failed, tests_total, error_signature, cumulative_edits,
    test_run_no AS run_no, prev_test_run,
    tests_failed = 0 AND tests_total > 0 AS green
FROM {{ ref('stg_events') }}
WHERE is_test_run
