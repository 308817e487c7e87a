-- materialization: view
-- The Dev's successful file edits, with the content hash each left behind.
SELECT
    repo, run_id, milestone_id, seq, turn_id, action_type,
    files_touched[1] AS path,
    json_extract_string(args, '$.content_sha') AS content_sha,
    coalesce(CAST(json_extract(args, '$.test_file') AS BOOLEAN), FALSE) AS test_file
FROM {{ ref('stg_events') }}
WHERE is_tool AND action_type IN ('write_file', 'edit_file') AND ok AND len(files_touched) > 0
