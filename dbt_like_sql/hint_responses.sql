-- materialization: table
-- Each Mentor hint and what the Dev did around it: the files it read or edited and what it searched
-- for in the turns before and after. direction_change: it went somewhere new after the hint;
-- tests_improved: more tests passed within the window than ever before the hint.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, hint_seq
WITH hints AS (
    SELECT mrun, repo, run_id, milestone_id, seq AS hint_seq, turn_id AS hint_turn, hint_level AS level,
        rule
    FROM {{ ref('stg_events') }}
    WHERE role = 'mentor' AND action_type = 'hint'
), targets AS (  -- what the Dev turned to: files it read or changed (by any tool, the shell too), searches
    SELECT mrun, seq, turn_id, 'search:' || pattern AS target
    FROM {{ ref('stg_events') }} WHERE is_tool AND action_type = 'search'
    UNION ALL
    SELECT mrun, seq, turn_id, unnest(files_read) FROM {{ ref('stg_events') }} WHERE is_tool AND len(files_read) > 0
    UNION ALL
    SELECT mrun, seq, turn_id, path FROM {{ ref('stg_edits') }}
), around AS (
    SELECT h.*,
        list_sort(list(DISTINCT t.target) FILTER (WHERE t.seq < h.hint_seq)) AS before_targets,
        list_sort(list(DISTINCT t.target) FILTER (WHERE t.seq > h.hint_seq)) AS after_targets
    FROM hints h
    LEFT JOIN targets t ON t.mrun = h.mrun AND t.target IS NOT NULL
        AND t.turn_id BETWEEN h.hint_turn - {{ var('hint_response_turns') }} AND h.hint_turn + {{ var('hint_response_turns') }}
    GROUP BY ALL
), tests AS (
    SELECT h.repo, h.run_id, h.milestone_id, h.hint_seq,
        coalesce(max(r.tests_passed) FILTER (WHERE r.seq < h.hint_seq), 0) AS passed_before,
        max(r.tests_passed) FILTER (WHERE r.seq > h.hint_seq
            AND r.turn_id <= h.hint_turn + {{ var('hint_response_turns') }}) AS passed_after
    FROM hints h
    LEFT JOIN {{ ref('stg_test_runs') }} r USING (mrun)
    GROUP BY ALL
)
SELECT a.repo, a.run_id, a.milestone_id, a.hint_seq, a.hint_turn, a.level, a.rule,
    coalesce(a.before_targets, []) AS before_targets,
    coalesce(a.after_targets, []) AS after_targets,
    list_filter(coalesce(a.after_targets, []), lambda x: NOT list_contains(coalesce(a.before_targets, []), x)) AS new_targets,
    len(list_filter(coalesce(a.after_targets, []), lambda x: NOT list_contains(coalesce(a.before_targets, []), x))) > 0
        AS direction_change,
    t.passed_before, t.passed_after,
    coalesce(t.passed_after > t.passed_before, FALSE) AS tests_improved
FROM around a JOIN tests t USING (repo, run_id, milestone_id, hint_seq)
