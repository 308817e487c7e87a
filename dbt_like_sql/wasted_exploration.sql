-- materialization: table
-- Work that led nowhere: edits a later edit undid (the file went back to the content it had
-- before), and files read but never edited afterwards.
WITH edits AS (
    SELECT *, lag(content_sha) OVER (PARTITION BY repo, run_id, milestone_id, path ORDER BY seq) AS before_sha
    FROM {{ ref('stg_edits') }}
), reverted AS (
    SELECT e.repo, e.run_id, e.milestone_id, 'reverted_edit' AS kind, e.seq, e.turn_id, e.path
    FROM edits e
    WHERE e.before_sha IS NOT NULL AND e.content_sha <> e.before_sha AND EXISTS (
        SELECT 1 FROM edits later
        WHERE later.repo = e.repo AND later.run_id = e.run_id AND later.milestone_id = e.milestone_id
          AND later.path = e.path AND later.seq > e.seq AND later.content_sha = e.before_sha)
), reads AS (
    SELECT repo, run_id, milestone_id, seq, turn_id, json_extract_string(args, '$.path') AS path
    FROM {{ ref('stg_events') }}
    WHERE is_tool AND action_type = 'read_file' AND ok
), unused AS (
    SELECT r.repo, r.run_id, r.milestone_id, 'unused_read' AS kind, r.seq, r.turn_id, r.path
    FROM reads r
    WHERE NOT EXISTS (
        SELECT 1 FROM {{ ref('stg_edits') }} e
        WHERE e.repo = r.repo AND e.run_id = r.run_id AND e.milestone_id = r.milestone_id
          AND e.path = r.path AND e.seq > r.seq)
)
SELECT * FROM reverted
UNION ALL
SELECT * FROM unused
