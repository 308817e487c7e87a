-- materialization: view
-- One row per recorded event, flattened and compact: what every other model starts from. Long
-- texts stay in raw_events; here an observation is its hash (obs_key), a call the hash of the tool
-- and its arguments (action_key), and `mrun` identifies the milestone run. These, the parsed tool
-- arguments (arg) and each event's neighbours in its milestone run (call_no, prev_call,
-- call_2_back, test_run_no, prev_test_run) are computed at load. A view: each model reads only
-- the columns it needs, straight from the Parquet files. file_edits: the files a Dev call changed, edit tools and
-- the shell alike, each with the content hash it left; files_read: read_file's file and those a shell command read.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, seq
SELECT
    mrun, repo, run_id, milestone_id, seq, turn_id, ts, role, action.type AS action_type,
    is_tool, is_test_run,
    coalesce(ok, TRUE) AS ok,
    action_key, obs_key,
    call_no, prev_call, call_2_back, test_run_no, prev_test_run,
    hint_level,
    arg.rule,
    coalesce(files_touched[1], arg.path) AS path,
    arg.pattern, arg.command,
    coalesce(arg.test_file, FALSE) AS test_file,
    len(files_touched) AS files_touched,
    file_edits, files_read, len(file_edits) > 0 AS is_edit,
    test_status.passed AS tests_passed,
    test_status.failed AS tests_failed,
    test_status.total AS tests_total,
    error_signature, cumulative_edits, cumulative_test_runs, model,
    usage."input" AS tokens_input, usage.cached AS tokens_cached, usage.output AS tokens_output,
    latency_s, cost_usd, synthetic
FROM {{ source('raw_events') }}
