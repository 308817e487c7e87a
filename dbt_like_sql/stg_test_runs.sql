-- materialization: view
-- The Dev's test runs, numbered per milestone run.
SELECT
    mrun, repo, run_id, milestone_id, seq, turn_id,
    tests_passed, tests_failed, tests_total, error_signature, cumulative_edits,
    row_number() OVER (PARTITION BY mrun ORDER BY seq) AS run_no,
    tests_failed = 0 AND tests_total > 0 AS green
FROM {{ ref('stg_events') }}
WHERE is_tool AND action_type = 'run_tests' AND tests_total IS NOT NULL
