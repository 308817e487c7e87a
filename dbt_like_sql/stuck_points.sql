-- materialization: table
-- Where the Dev got stuck, one row per stretch: test runs failing the same way again and again,
-- whether it edited in between or not (same_error), and OpenHands' loop detectors: one action with
-- one observation again and again (repeat_action_observation), one failing action again and again
-- (repeat_action_error), two actions taking turns (alternating). signal_seq is where the stretch
-- became a signal. Every detector flags a row by comparing it with the calls just before it (its
-- neighbours are columns, computed at load: no sort here), then consecutive flagged rows are
-- grouped into stretches.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, kind, start_seq
WITH tests AS (
    SELECT mrun, repo, run_id, milestone_id, seq, turn_id, run_no,
        prev_test_run.seq AS prev_seq, prev_test_run.turn_id AS prev_turn,
        NOT green AND error_signature = prev_test_run.error_signature AS repeats
    FROM {{ ref('stg_test_runs') }}
), tools AS (
    SELECT mrun, repo, run_id, milestone_id, seq, turn_id, call_no AS rn,
        prev_call.seq AS prev_seq, prev_call.turn_id AS prev_turn,
        call_2_back.seq AS seq_2_back, call_2_back.turn_id AS turn_2_back,
        action_key = prev_call.action_key AND obs_key = prev_call.obs_key AS same_pair,
        action_key = prev_call.action_key AND NOT ok AND NOT prev_call.ok AS same_error_call,
        -- this action repeats the one two steps back (with its observation) and differs from the last
        action_key = call_2_back.action_key AND obs_key = call_2_back.obs_key
            AND action_key <> prev_call.action_key AS alternates
    FROM {{ ref('stg_events') }}
    WHERE is_tool
), flagged AS MATERIALIZED (
    -- a row repeating the one before extends the stretch that row started (k repeats: k + 1 rows);
    -- alternation counts from two rows back (k alternating rows: k + 2 actions)
    SELECT 'same_error' AS kind, mrun, repo, run_id, milestone_id, seq, turn_id, run_no AS rn, prev_seq AS start_seq,
        prev_turn AS start_turn, 1 AS lead_rows
    FROM tests WHERE repeats
    UNION ALL
    SELECT 'repeat_action_observation', mrun, repo, run_id, milestone_id, seq, turn_id, rn, prev_seq, prev_turn, 1
    FROM tools WHERE same_pair
    UNION ALL
    SELECT 'repeat_action_error', mrun, repo, run_id, milestone_id, seq, turn_id, rn, prev_seq, prev_turn, 1
    FROM tools WHERE same_error_call
    UNION ALL
    SELECT 'alternating', mrun, repo, run_id, milestone_id, seq, turn_id, rn, seq_2_back, turn_2_back, 2
    FROM tools WHERE alternates
), starts AS (  -- a flagged row whose row before is not flagged starts a stretch...
    SELECT f.* FROM flagged f ANTI JOIN flagged p ON p.kind = f.kind AND p.mrun = f.mrun AND p.rn = f.rn - 1
), ends AS (  -- ...and one whose row after is not flagged ends it
    SELECT f.* FROM flagged f ANTI JOIN flagged n ON n.kind = f.kind AND n.mrun = f.mrun AND n.rn = f.rn + 1
), stretches AS (  -- the rows before its first flagged row (lead_rows), then its flagged rows
    SELECT s.*, e.seq AS end_seq, e.rn - s.rn + 1 + s.lead_rows AS length
    FROM starts s ASOF JOIN ends e ON e.kind = s.kind AND e.mrun = s.mrun AND e.rn >= s.rn
), thresholds AS (
    SELECT * FROM (VALUES
        ('same_error', {{ var('stuck_same_error_cycles') }}),
        ('repeat_action_observation', {{ var('repeat_action_observation') }}),
        ('repeat_action_error', {{ var('repeat_action_error') }}),
        ('alternating', {{ var('alternating_steps') }})
    ) t(kind, threshold)
), signals AS (  -- long enough: the row where it reached the threshold is the signal
    SELECT s.*, s.rn + t.threshold - s.lead_rows - 1 AS signal_rn
    FROM stretches s JOIN thresholds t USING (kind)
    WHERE s.length >= t.threshold
)
SELECT s.repo, s.run_id, s.milestone_id, s.kind, s.start_seq, s.start_turn,
    f.seq AS signal_seq, f.turn_id AS signal_turn, s.length, s.end_seq
FROM signals s JOIN flagged f ON f.kind = s.kind AND f.mrun = s.mrun AND f.rn = s.signal_rn
