-- materialization: table
-- Runs that look like recall rather than exploration. blind_first_edit: the first edit to a
-- ground-truth file came before any observation (task, tool output, hint) had named that file.
-- verbatim: most n-grams the Dev added to ground-truth files also appear in the ground truth.
-- straight_line: no search, no edit outside the ground truth's files, no reverted edit.
-- flagged = blind_first_edit OR (verbatim AND straight_line).
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id
-- one_row_per: raw_milestones
WITH ms AS (
    SELECT hash(repo, run_id, milestone_id) AS mrun, repo, run_id, milestone_id, ground_truth_files, final_diff,
        ground_truth
    FROM {{ source('raw_milestones') }}
), mentioned AS (  -- milestone runs where something before that edit named the file
    SELECT DISTINCT f.mrun
    FROM {{ ref('first_ground_truth_edits') }} f JOIN {{ source('raw_events') }} o ON o.mrun = f.mrun AND o.seq < f.seq
    WHERE contains(coalesce(o.full_observation, o.observation, '') || ' ' || coalesce(o.action.content, ''), f.path)
       OR contains(coalesce(o.full_observation, o.observation, '') || ' ' || coalesce(o.action.content, ''),
           parse_filename(f.path))
), blind AS (
    SELECT repo, run_id, milestone_id, path AS first_gt_file, mrun NOT IN (SELECT mrun FROM mentioned) AS blind_first_edit
    FROM {{ ref('first_ground_truth_edits') }}
), added AS (
    -- the lines the final diff and the ground truth add to ground-truth files, as tokens
    SELECT repo, run_id, milestone_id,
        regexp_extract_all(array_to_string(list_filter(string_split(array_to_string(list_filter(
            string_split(final_diff, 'diff --git '),
            lambda chunk: list_contains(ground_truth_files, regexp_extract(chunk, '^a/(\S+)', 1))), chr(10)), chr(10)),
            lambda l: starts_with(l, '+') AND NOT starts_with(l, '+++')), ' '), '[A-Za-z0-9_]+|[^A-Za-z0-9_\s]') AS cand,
        regexp_extract_all(array_to_string(list_filter(string_split(ground_truth, chr(10)),
            lambda l: starts_with(l, '+') AND NOT starts_with(l, '+++')), ' '), '[A-Za-z0-9_]+|[^A-Za-z0-9_\s]') AS gt
    FROM ms
), grams AS (
    SELECT repo, run_id, milestone_id,
        list_distinct(list_transform(range(1, len(cand) - {{ var('memorisation_ngram') }} + 2),
            lambda i: array_to_string(cand[i:i + {{ var('memorisation_ngram') }} - 1], ' '))) AS cand_grams,
        list_distinct(list_transform(range(1, len(gt) - {{ var('memorisation_ngram') }} + 2),
            lambda i: array_to_string(gt[i:i + {{ var('memorisation_ngram') }} - 1], ' '))) AS gt_grams
    FROM added
), overlap AS (
    SELECT repo, run_id, milestone_id,
        CASE WHEN len(cand_grams) = 0 THEN 0.0
             ELSE len(list_intersect(cand_grams, gt_grams)) / len(cand_grams) END AS gt_overlap
    FROM grams
), exploration AS (
    SELECT any_value(ms.repo) AS repo, any_value(ms.run_id) AS run_id, any_value(ms.milestone_id) AS milestone_id,
        count(*) FILTER (WHERE e.action_type = 'search') AS searches
    FROM ms LEFT JOIN {{ ref('stg_events') }} e ON e.mrun = ms.mrun AND e.is_tool AND e.ok
    GROUP BY ms.mrun
), off_target AS (  -- changes to files outside the ground truth, by any tool (the shell too)
    SELECT ms.repo, ms.run_id, ms.milestone_id, count(*) AS off_target_edits
    FROM ms JOIN {{ ref('stg_edits') }} e ON e.mrun = ms.mrun
    WHERE NOT list_contains(ms.ground_truth_files, e.path) AND NOT e.test_file
    GROUP BY ALL
), reverts AS (
    SELECT repo, run_id, milestone_id, count(*) AS reverted_edits
    FROM {{ ref('wasted_exploration') }} WHERE kind = 'reverted_edit' GROUP BY ALL
)
SELECT o.repo, o.run_id, o.milestone_id,
    b.first_gt_file, coalesce(b.blind_first_edit, FALSE) AS blind_first_edit,
    round(o.gt_overlap, 4) AS gt_overlap,
    o.gt_overlap >= {{ var('memorisation_overlap') }} AS verbatim,
    x.searches = 0 AND coalesce(t.off_target_edits, 0) = 0 AND coalesce(r.reverted_edits, 0) = 0 AS straight_line,
    coalesce(b.blind_first_edit, FALSE)
        OR (o.gt_overlap >= {{ var('memorisation_overlap') }} AND x.searches = 0
            AND coalesce(t.off_target_edits, 0) = 0 AND coalesce(r.reverted_edits, 0) = 0) AS flagged
FROM overlap o
JOIN exploration x USING (repo, run_id, milestone_id)
LEFT JOIN off_target t USING (repo, run_id, milestone_id)
LEFT JOIN blind b USING (repo, run_id, milestone_id)
LEFT JOIN reverts r USING (repo, run_id, milestone_id)
