-- materialization: view
-- The files the Dev's calls changed, one row per call and file, with the content hash each left behind:
-- edit tools and shell commands (`sed -i`, `cat >> f`, `git checkout -- f`) alike.
-- partitioned_by: repo, milestone_id
SELECT mrun, repo, run_id, milestone_id, seq, turn_id, action_type, edit.path, edit.content_sha, test_file
FROM (SELECT *, unnest(file_edits) AS edit FROM {{ ref('stg_events') }} WHERE is_edit)
