-- materialization: table
-- Where the Dev got stuck, one row per stretch: test runs failing the same way again and again,
-- whether it edited in between or not (same_error), and OpenHands' loop detectors: one action with
-- one observation again and again (repeat_action_observation), one failing action again and again
-- (repeat_action_error), two actions taking turns (alternating). signal_seq is where the stretch
-- became a signal. Every detector flags a row by comparing it with the rows just before it (one
-- sorted pass), then groups consecutive flagged rows into stretches.
WITH tests AS (
    SELECT mrun, repo, run_id, milestone_id, seq, turn_id, run_no,
        NOT green AND error_signature IS NOT NULL AS failing,
        lag(seq) OVER w AS prev_seq, lag(turn_id) OVER w AS prev_turn,
        NOT green AND error_signature = lag(error_signature) OVER w AS repeats
    FROM {{ ref('stg_test_runs') }}
    WINDOW w AS (PARTITION BY mrun ORDER BY seq)
), tools AS (
    SELECT mrun, repo, run_id, milestone_id, seq, turn_id,
        row_number() OVER w AS rn,
        lag(seq) OVER w AS prev_seq, lag(turn_id) OVER w AS prev_turn,
        lag(seq, 2) OVER w AS seq_2_back, lag(turn_id, 2) OVER w AS turn_2_back,
        action_key = lag(action_key) OVER w AND obs_key = lag(obs_key) OVER w AS same_pair,
        action_key = lag(action_key) OVER w AND NOT ok AND NOT lag(ok) OVER w AS same_error_call,
        -- this action repeats the one two steps back (with its observation) and differs from the last
        action_key = lag(action_key, 2) OVER w AND obs_key = lag(obs_key, 2) OVER w
            AND action_key <> lag(action_key) OVER w AS alternates
    FROM {{ ref('stg_events') }}
    WHERE is_tool
    WINDOW w AS (PARTITION BY mrun ORDER BY seq)
), flagged AS (
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
), islands AS (
    SELECT *, rn - row_number() OVER (PARTITION BY kind, mrun ORDER BY seq) AS island
    FROM flagged
), stretches AS (
    SELECT kind, repo, run_id, milestone_id,
        arg_min(start_seq, seq) AS start_seq, arg_min(start_turn, seq) AS start_turn,
        list(seq ORDER BY seq) AS seqs, list(turn_id ORDER BY seq) AS turns,
        count(*) + any_value(lead_rows) AS length, any_value(lead_rows) AS lead_rows
    FROM islands
    GROUP BY kind, mrun, repo, run_id, milestone_id, island
), thresholds AS (
    SELECT * FROM (VALUES
        ('same_error', {{ var('stuck_same_error_cycles') }}),
        ('repeat_action_observation', {{ var('repeat_action_observation') }}),
        ('repeat_action_error', {{ var('repeat_action_error') }}),
        ('alternating', {{ var('alternating_steps') }})
    ) t(kind, threshold)
)
SELECT s.repo, s.run_id, s.milestone_id, s.kind, s.start_seq, s.start_turn,
    s.seqs[t.threshold - s.lead_rows] AS signal_seq, s.turns[t.threshold - s.lead_rows] AS signal_turn,
    s.length, s.seqs[-1] AS end_seq
FROM stretches s JOIN thresholds t USING (kind)
WHERE s.length >= t.threshold
