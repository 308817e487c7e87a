-- materialization: table
-- One row per milestone run with every signal of the other models: what the Reviewer grades and
-- what reports show.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id
-- one_row_per: raw_milestones
WITH events AS (
    SELECT any_value(repo) AS repo, any_value(run_id) AS run_id, any_value(milestone_id) AS milestone_id,
        count(*) FILTER (WHERE is_tool) AS tool_calls,
        count(*) FILTER (WHERE is_test_run) AS test_runs,  -- run_tests, shell test runs, failed submissions
        -- calls that changed a file that is not a test, any tool (the harness's one count: `tools.is_edit`)
        coalesce(max(cumulative_edits), 0) AS edits,
        coalesce(sum(tokens_input), 0) AS tokens_input,
        coalesce(sum(tokens_output), 0) AS tokens_output,
        any_value(model) FILTER (WHERE model <> '') AS model
    FROM {{ ref('stg_events') }} GROUP BY mrun  -- one integer key: grouping 10M rows by three texts is slow
), stuck AS (
    SELECT repo, run_id, milestone_id, count(*) AS stuck_points, min(signal_turn) AS first_stuck_turn
    FROM {{ ref('stuck_points') }} GROUP BY ALL
), hints AS (
    SELECT repo, run_id, milestone_id,
        count(*) FILTER (WHERE direction_change) AS direction_changes,
        count(*) FILTER (WHERE tests_improved) AS hints_with_progress
    FROM {{ ref('hint_responses') }} GROUP BY ALL
), waste AS (
    SELECT repo, run_id, milestone_id,
        count(*) FILTER (WHERE kind = 'reverted_edit') AS reverted_edits,
        count(*) FILTER (WHERE kind = 'unused_read') AS unused_reads
    FROM {{ ref('wasted_exploration') }} GROUP BY ALL
), cheats AS (
    SELECT repo, run_id, milestone_id, count(*) AS cheating_probes, list(DISTINCT probe) AS probes
    FROM {{ ref('cheating_flags') }} GROUP BY ALL
), progress AS (
    SELECT repo, run_id, milestone_id, count(*) FILTER (WHERE improved) AS progress_steps
    FROM {{ ref('progress_curves') }} GROUP BY ALL
), cycles AS (
    -- edit -> test iterations: test runs with an edit since the previous run
    SELECT any_value(repo) AS repo, any_value(run_id) AS run_id, any_value(milestone_id) AS milestone_id,
        count(*) FILTER (WHERE cumulative_edits > coalesce(prev_test_run.cumulative_edits, 0)) AS iterations
    FROM {{ ref('stg_test_runs') }}
    GROUP BY mrun
)
SELECT m.repo, m.run_id, m.milestone_id, r.agent, coalesce(e.model, r.model) AS model, r.harness_version,
    coalesce(r.mode, 'standard') AS mode, coalesce(r.harness_profile, 'V0') AS harness_profile,
    coalesce(r.test_visibility, 'visible') AS test_visibility, coalesce(r.plan_id, '') AS plan_id,
    coalesce(r.scaffold, 'harnessforge') AS scaffold, coalesce(r.scaffold_version, r.harness_version) AS scaffold_version,
    m.status, m.turns,
    len(m.hints_released) AS hints, coalesce(list_max(m.hints_released), 0) AS max_hint_level,
    m.cost_usd, m.wall_s, m.synthetic, m.carried_from, m.reset_to,
    coalesce(e.tool_calls, 0) AS tool_calls, coalesce(e.test_runs, 0) AS test_runs, coalesce(e.edits, 0) AS edits,
    coalesce(e.tokens_input, 0) AS tokens_input, coalesce(e.tokens_output, 0) AS tokens_output,
    coalesce(s.stuck_points, 0) AS stuck_points, s.first_stuck_turn,
    coalesce(h.direction_changes, 0) AS direction_changes, coalesce(h.hints_with_progress, 0) AS hints_with_progress,
    coalesce(p.progress_steps, 0) AS progress_steps, coalesce(cy.iterations, 0) AS iterations,
    coalesce(w.reverted_edits, 0) AS reverted_edits, coalesce(w.unused_reads, 0) AS unused_reads,
    ef.milestone_id IS NOT NULL AS efficient,
    coalesce(mf.flagged, FALSE) AS memorisation_flag, mf.gt_overlap,
    coalesce(c.cheating_probes, 0) AS cheating_probes, coalesce(c.probes, []) AS probes,
    coalesce(l.located, FALSE) AS located_ground_truth, l.located_turn
FROM {{ source('raw_milestones') }} m
LEFT JOIN {{ source('raw_runs') }} r USING (repo, run_id)
LEFT JOIN events e USING (repo, run_id, milestone_id)
LEFT JOIN stuck s USING (repo, run_id, milestone_id)
LEFT JOIN hints h USING (repo, run_id, milestone_id)
LEFT JOIN waste w USING (repo, run_id, milestone_id)
LEFT JOIN cheats c USING (repo, run_id, milestone_id)
LEFT JOIN progress p USING (repo, run_id, milestone_id)
LEFT JOIN cycles cy USING (repo, run_id, milestone_id)
LEFT JOIN {{ ref('efficient_paths') }} ef USING (repo, run_id, milestone_id)
LEFT JOIN {{ ref('memorisation_flags') }} mf USING (repo, run_id, milestone_id)
LEFT JOIN {{ ref('located_ground_truth') }} l USING (repo, run_id, milestone_id)
