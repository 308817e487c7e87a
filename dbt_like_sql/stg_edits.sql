-- materialization: view
-- The Dev's successful file edits, with the content hash each left behind.
SELECT mrun, repo, run_id, milestone_id, seq, turn_id, action_type, path, content_sha, test_file
FROM {{ ref('stg_events') }}
WHERE is_tool AND action_type IN ('write_file', 'edit_file') AND ok AND files_touched > 0
