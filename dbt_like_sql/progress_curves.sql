-- materialization: view
-- Passing tests over the Dev's turns: one point per test run, with the best so far and whether
-- this run beat it (where progress happened).
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, seq
SELECT repo, run_id, milestone_id, seq, turn_id, run_no, tests_passed, tests_failed, tests_total,
    max(tests_passed) OVER w AS best_passed,
    tests_passed > coalesce(max(tests_passed) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS improved
FROM {{ ref('stg_test_runs') }}
WINDOW w AS (PARTITION BY mrun ORDER BY seq)
