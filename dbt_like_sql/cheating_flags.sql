-- materialization: table
-- Probes of history and answer keys, and network attempts: every bash command (and file read)
-- matching a pattern of the rules' `cheating_patterns`, one row per command and pattern. What a command
-- writes is data, not a probe: a heredoc's body and quoted text spanning lines (`printf '...' > f`, a CI
-- file saying `pip install`) are left out before matching, so a Dev that edits through the shell is
-- judged as one that uses the edit tools.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id, seq, probe
WITH commands AS (
    SELECT repo, run_id, milestone_id, seq, turn_id, action_type,
        CASE action_type WHEN 'bash' THEN command ELSE 'read_file ' || path END AS command,
        CASE action_type WHEN 'bash' THEN regexp_replace(regexp_replace(regexp_replace(command,
                '<<-?\s*[''"]?\w+[''"]?[^\n]*\n[\s\S]*', '<<heredoc'),  -- a heredoc's body (and what follows it)
                '''[^'']*\n[^'']*''', '''text''', 'g'),  -- single-quoted text spanning lines
                '"(?:[^"\\]|\\.)*\n(?:[^"\\]|\\.)*"', '"text"', 'g')  -- double-quoted text spanning lines
            ELSE 'read_file ' || path END AS probed  -- what the command runs, its written text left out
    FROM {{ ref('stg_events') }}
    WHERE is_tool AND action_type IN ('bash', 'read_file')
), suspicious AS MATERIALIZED (  -- one constant regex (all patterns at once) over every command first
    SELECT * FROM commands WHERE regexp_matches(probed, {{ var('cheating_any') }})
), patterns AS (
    SELECT unnest({{ var('cheating_patterns') }}, recursive := true)
), matches AS (  -- then each pattern once per distinct command: a pattern that is not a constant is compiled per row
    SELECT c.probed, p.key AS probe
    FROM (SELECT DISTINCT probed FROM suspicious) c CROSS JOIN patterns p
    WHERE regexp_matches(c.probed, p.value)
)
SELECT s.repo, s.run_id, s.milestone_id, s.seq, s.turn_id, m.probe, s.command
FROM suspicious s JOIN matches m USING (probed)
