-- materialization: table
-- Milestones the Dev passed quickly and alone: fewer turns than the threshold, no hint.
SELECT repo, run_id, milestone_id, turns
FROM raw_milestones
WHERE status = 'PASS' AND turns < {{ var('efficient_max_turns') }} AND len(hints_released) = 0
