-- materialization: table
-- Milestones the Dev passed quickly and alone: fewer turns than the threshold, no hint.
-- partitioned_by: repo, milestone_id
-- unique: repo, run_id, milestone_id
SELECT repo, run_id, milestone_id, turns
FROM {{ source('raw_milestones') }}
WHERE status = 'PASS' AND turns < {{ var('efficient_max_turns') }} AND len(hints_released) = 0
