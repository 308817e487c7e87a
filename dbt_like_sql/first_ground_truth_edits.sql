-- materialization: table
-- Per milestone run, the Dev's first edit to a file the reference solution changes. A table of its
-- own (not a CTE of memorisation_flags), so the join of these few rows with every event's text
-- there is planned from their real size.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id
SELECT DISTINCT ON (e.mrun) e.mrun, e.repo, e.run_id, e.milestone_id, e.seq, e.turn_id, e.path
FROM {{ ref('stg_edits') }} e
JOIN (SELECT hash(repo, run_id, milestone_id) AS mrun, ground_truth_files FROM {{ source('raw_milestones') }}) m USING (mrun)
WHERE list_contains(m.ground_truth_files, e.path)
ORDER BY e.mrun, e.seq
