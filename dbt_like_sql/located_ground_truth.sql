-- materialization: table
-- Whether the Dev went straight to the change's files: the turn by which it had read or changed every
-- source file of the ground truth (core_files; any tool, the shell too), and `located` when that came
-- within probe_locate_turns. In the probe mode (only the feature description, no hints) a located run is
-- seed 000's memorisation signal: the Dev knew where the change goes without looking.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id
WITH ms AS (
    SELECT hash(repo, run_id, milestone_id) AS mrun, repo, run_id, milestone_id, core_files
    FROM {{ source('raw_milestones') }} WHERE len(core_files) > 0
), touches AS (
    SELECT mrun, turn_id, unnest(files_read) AS path FROM {{ ref('stg_events') }} WHERE is_tool AND len(files_read) > 0
    UNION ALL
    SELECT mrun, turn_id, path FROM {{ ref('stg_edits') }}
), wanted AS (
    SELECT mrun, repo, run_id, milestone_id, unnest(core_files) AS path FROM ms
), firsts AS (
    SELECT w.repo, w.run_id, w.milestone_id, w.path, min(t.turn_id) AS first_turn
    FROM wanted w LEFT JOIN touches t ON t.mrun = w.mrun AND t.path = w.path
    GROUP BY ALL
)
SELECT repo, run_id, milestone_id, count(*) AS core_files, count(first_turn) AS found_files,
    CASE WHEN count(first_turn) = count(*) THEN max(first_turn) END AS located_turn,
    coalesce(count(first_turn) = count(*) AND max(first_turn) <= {{ var('probe_locate_turns') }}, FALSE) AS located
FROM firsts
GROUP BY ALL
