-- materialization: table
-- Probes of history and answer keys, and network attempts: every bash command (and file read)
-- matching a pattern of the rules' `cheating_patterns`, one row per command and pattern.
WITH commands AS (
    SELECT repo, run_id, milestone_id, seq, turn_id, action_type,
        CASE action_type WHEN 'bash' THEN command ELSE 'read_file ' || path END AS command
    FROM {{ ref('stg_events') }}
    WHERE is_tool AND action_type IN ('bash', 'read_file')
), patterns AS (
    SELECT unnest({{ var('cheating_patterns') }}, recursive := true)
)
SELECT c.repo, c.run_id, c.milestone_id, c.seq, c.turn_id, p.key AS probe, c.command
FROM (SELECT * FROM commands WHERE regexp_matches(command, {{ var('cheating_any') }})) c  -- one constant regex first
CROSS JOIN patterns p
WHERE regexp_matches(c.command, p.value)
