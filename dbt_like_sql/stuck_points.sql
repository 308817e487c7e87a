-- materialization: table
-- Where the Dev got stuck, one row per stretch: test runs failing the same way again and again,
-- whether it edited in between or not (same_error), and
-- OpenHands' loop detectors: one action with one observation again and again
-- (repeat_action_observation), one failing action again and again (repeat_action_error), two
-- actions taking turns (alternating). signal_seq is where the stretch became a signal.
WITH runs AS (
    SELECT *,
        lag(error_signature) OVER w AS prev_signature
    FROM {{ ref('stg_test_runs') }}
    WINDOW w AS (PARTITION BY repo, run_id, milestone_id ORDER BY seq)
), failing AS (
    SELECT *, sum(CASE WHEN error_signature = prev_signature THEN 0 ELSE 1 END)
        OVER (PARTITION BY repo, run_id, milestone_id ORDER BY seq) AS stretch
    FROM runs
    WHERE NOT green AND error_signature IS NOT NULL
), same_error AS (
    SELECT repo, run_id, milestone_id, 'same_error' AS kind,
        min(seq) AS start_seq, min(turn_id) AS start_turn,
        list(seq ORDER BY seq) AS seqs, list(turn_id ORDER BY seq) AS turns, count(*) AS length
    FROM failing
    GROUP BY repo, run_id, milestone_id, stretch
    HAVING count(*) >= {{ var('stuck_same_error_cycles') }}
), tools AS (
    SELECT *,
        lag(action_key) OVER w AS prev_key,
        lag(observation) OVER w AS prev_observation,
        lag(ok) OVER w AS prev_ok,
        row_number() OVER w AS rn,
        list(action_key) OVER recent AS recent_keys,
        list(observation) OVER recent AS recent_obs,
        list(seq) OVER recent AS recent_seqs,
        list(turn_id) OVER recent AS recent_turns
    FROM {{ ref('stg_events') }}
    WHERE is_tool
    WINDOW w AS (PARTITION BY repo, run_id, milestone_id ORDER BY seq),
        recent AS (w ROWS BETWEEN {{ var('alternating_steps') }} - 1 PRECEDING AND CURRENT ROW)
), repeats AS (
    SELECT *,
        sum(CASE WHEN action_key = prev_key AND observation = prev_observation THEN 0 ELSE 1 END)
            OVER (PARTITION BY repo, run_id, milestone_id ORDER BY seq) AS same_pair,
        sum(CASE WHEN action_key = prev_key AND NOT ok AND NOT prev_ok THEN 0 ELSE 1 END)
            OVER (PARTITION BY repo, run_id, milestone_id ORDER BY seq) AS same_error_call
    FROM tools
), repeat_action_observation AS (
    SELECT repo, run_id, milestone_id, 'repeat_action_observation' AS kind,
        min(seq) AS start_seq, min(turn_id) AS start_turn,
        list(seq ORDER BY seq) AS seqs, list(turn_id ORDER BY seq) AS turns, count(*) AS length
    FROM repeats
    GROUP BY repo, run_id, milestone_id, same_pair
    HAVING count(*) >= {{ var('repeat_action_observation') }}
), repeat_action_error AS (
    SELECT repo, run_id, milestone_id, 'repeat_action_error' AS kind,
        min(seq) AS start_seq, min(turn_id) AS start_turn,
        list(seq ORDER BY seq) AS seqs, list(turn_id ORDER BY seq) AS turns, count(*) AS length
    FROM repeats
    WHERE NOT ok
    GROUP BY repo, run_id, milestone_id, same_error_call
    HAVING count(*) >= {{ var('repeat_action_error') }}
), alternating_ends AS (
    -- the last action of a full window whose odd and even positions each repeat one action with
    -- one observation, the two actions differing
    SELECT repo, run_id, milestone_id, seq, turn_id, rn, recent_seqs[1] AS window_seq, recent_turns[1] AS window_turn
    FROM tools
    WHERE len(recent_keys) = {{ var('alternating_steps') }}
      AND len(list_distinct(recent_keys)) = 2
      AND len(list_distinct(list_filter(recent_keys, lambda k, i: i % 2 = 1))) = 1
      AND len(list_distinct(list_filter(recent_keys, lambda k, i: i % 2 = 0))) = 1
      AND len(list_distinct(list_filter(recent_obs, lambda o, i: i % 2 = 1))) = 1
      AND len(list_distinct(list_filter(recent_obs, lambda o, i: i % 2 = 0))) = 1
), alternating AS (
    SELECT repo, run_id, milestone_id, 'alternating' AS kind,
        min(window_seq) AS start_seq, min(window_turn) AS start_turn,
        list(seq ORDER BY seq) AS seqs, list(turn_id ORDER BY seq) AS turns,
        count(*) + {{ var('alternating_steps') }} - 1 AS length
    FROM (SELECT *, rn - row_number() OVER (PARTITION BY repo, run_id, milestone_id ORDER BY seq) AS island
          FROM alternating_ends)
    GROUP BY repo, run_id, milestone_id, island
), stretches AS (
    SELECT repo, run_id, milestone_id, kind, start_seq, start_turn, seqs[{{ var('stuck_same_error_cycles') }}] AS signal_seq,
        turns[{{ var('stuck_same_error_cycles') }}] AS signal_turn, length, seqs[-1] AS end_seq FROM same_error
    UNION ALL
    SELECT repo, run_id, milestone_id, kind, start_seq, start_turn, seqs[{{ var('repeat_action_observation') }}],
        turns[{{ var('repeat_action_observation') }}], length, seqs[-1] FROM repeat_action_observation
    UNION ALL
    SELECT repo, run_id, milestone_id, kind, start_seq, start_turn, seqs[{{ var('repeat_action_error') }}],
        turns[{{ var('repeat_action_error') }}], length, seqs[-1] FROM repeat_action_error
    UNION ALL
    SELECT repo, run_id, milestone_id, kind, start_seq, start_turn, seqs[1], turns[1], length, seqs[-1] FROM alternating
)
SELECT * FROM stretches
