-- Generated trajectories for the analytics benchmark: $total events, one JSONL file per
-- (run, milestone) under $staging, runs $repo/bench-<first_run...>, milestones m<first_milestone + 1...>.
-- Placeholders are filled by benchmarks/analytics.py.
-- Each milestone: half messages, half tool calls (read, edit, test, bash in turn), two hints, test
-- runs failing differently each time (progress), and one stretch for each stuck detector: twelve
-- test runs failing the same way (seq 400-495), one read repeated eight times (600-615), one
-- failing command repeated six times (700-711), two reads taking turns twelve times (800-823).
COPY (
    WITH base AS (
        SELECT i, i // ($milestones * $per_milestone) + $first_run AS r,
               (i // $per_milestone) % $milestones + $first_milestone AS m,
               i % $per_milestone AS seq
        FROM range($total) t(i)
    ), kinds AS (
        SELECT *, CASE WHEN seq = 0 THEN 'milestone_start' WHEN seq % 500 = 250 THEN 'hint'
                       WHEN seq % 2 = 0 THEN 'message'
                       WHEN seq BETWEEN 600 AND 615 OR seq BETWEEN 800 AND 823 THEN 'read_file'
                       WHEN seq BETWEEN 700 AND 711 THEN 'bash'
                       ELSE ['read_file', 'edit_file', 'run_tests', 'bash'][((seq // 2) % 4) + 1] END AS kind,
            CASE WHEN seq BETWEEN 600 AND 615 THEN 'src/loop.py'
                 WHEN seq BETWEEN 800 AND 823 THEN ['src/a.py', 'src/b.py'][(seq // 2) % 2 + 1]
                 ELSE 'src/f' || (seq % 7) || '.py' END AS read_path
        FROM base
    )
    SELECT 'bench-' || r AS run_id, '$repo' AS repo, printf('m%04d', m + 1) AS milestone_id,
        seq, seq // 8 AS turn_id,
        strftime(TIMESTAMP '2026-11-30 10:00:00' + to_seconds(seq), '%Y-%m-%dT%H:%M:%SZ') AS ts,  -- as the Recorder writes it
        CASE kind WHEN 'milestone_start' THEN 'navigator' WHEN 'hint' THEN 'mentor' ELSE 'dev' END AS role,
        {'type': kind, 'content': CASE WHEN kind = 'message' THEN 'thinking about step ' || seq ELSE '' END,
          'args': CASE kind
            WHEN 'read_file' THEN json_object('path', read_path)
            WHEN 'edit_file' THEN json_object('path', 'src/f' || (seq % 5) || '.py', 'content_sha', md5(i::VARCHAR)[:12])
            WHEN 'bash' THEN json_object('command', CASE WHEN seq BETWEEN 700 AND 711 THEN 'make'
                                                         WHEN seq % 997 = 7 THEN 'git log --all' ELSE 'ls src' END)
            WHEN 'hint' THEN json_object('rule', 'same_error')
            ELSE json_object() END} AS action,
        CASE WHEN role = 'dev' AND kind <> 'message' THEN 'call_' || seq END AS call_id,
        CASE kind WHEN 'run_tests' THEN (seq // 64) || ' passed, 2 failed'
                  WHEN 'bash' THEN CASE WHEN seq BETWEEN 700 AND 711 THEN 'make: *** [all] Error ' || seq
                                        ELSE 'f0.py f1.py [exit code 0]' END
                  WHEN 'edit_file' THEN 'edited'
                  WHEN 'read_file' THEN 'def ' || replace(read_path, '/', '_') || '(): pass' ELSE '' END AS observation,
        40 AS observation_chars, NOT seq BETWEEN 700 AND 711 AS ok,
        CASE WHEN kind = 'hint' THEN 'look at f1' END AS mentor_hint,
        CASE WHEN kind = 'hint' THEN 1 END AS hint_level,
        CASE WHEN kind = 'edit_file' THEN ['src/f' || (seq % 5) || '.py'] ELSE [] END AS files_touched,
        CASE WHEN kind = 'run_tests' THEN {'passed': seq // 64, 'failed': 2, 'total': seq // 64 + 2} END AS test_status,
        CASE WHEN kind <> 'run_tests' THEN NULL WHEN seq BETWEEN 400 AND 495 THEN 'sig-stuck'
             ELSE 'sig' || seq END AS error_signature,
        seq // 8 AS cumulative_edits, seq // 8 AS cumulative_test_runs, FALSE AS direction_change,
        CASE WHEN kind = 'message' THEN 'bench-model' ELSE '' END AS model,
        CASE WHEN kind = 'message' THEN {'input': 1000, 'cached': 500, 'output': 50} END AS usage,
        0.5 AS latency_s, 0.0 AS cost_usd, FALSE AS synthetic,
        'bench-' || r AS p_run, printf('m%04d', m + 1) AS p_mid
    FROM kinds
) TO '$staging' (FORMAT json, PARTITION_BY (p_run, p_mid))
