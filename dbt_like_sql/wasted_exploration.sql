-- materialization: table
-- Work that led nowhere: edits a later edit undid (the file went back to the content it had
-- before), and files read but never edited afterwards (edits and reads by any tool, the shell too).
-- partitioned_by: repo, milestone_id
WITH edits AS (
    SELECT *, lag(content_sha) OVER (PARTITION BY mrun, path ORDER BY seq) AS before_sha
    FROM {{ ref('stg_edits') }}
), last_seen AS (  -- the last time each file had each content
    SELECT mrun, path, content_sha, max(seq) AS last_seq FROM edits GROUP BY ALL
), reverted AS (
    SELECT e.repo, e.run_id, e.milestone_id, 'reverted_edit' AS kind, e.seq, e.turn_id, e.path
    FROM edits e JOIN last_seen l ON l.mrun = e.mrun AND l.path = e.path AND l.content_sha = e.before_sha
    WHERE e.content_sha <> e.before_sha AND l.last_seq > e.seq
), last_edit AS (
    SELECT mrun, path, max(last_seq) AS last_seq FROM last_seen GROUP BY ALL
), reads AS (
    SELECT mrun, repo, run_id, milestone_id, seq, turn_id, unnest(files_read) AS path
    FROM {{ ref('stg_events') }} WHERE is_tool AND ok AND len(files_read) > 0
), unused AS (
    SELECT r.repo, r.run_id, r.milestone_id, 'unused_read' AS kind, r.seq, r.turn_id, r.path
    FROM reads r LEFT JOIN last_edit l ON l.mrun = r.mrun AND l.path = r.path
    WHERE l.last_seq IS NULL OR l.last_seq < r.seq
)
SELECT * FROM reverted
UNION ALL
SELECT * FROM unused
