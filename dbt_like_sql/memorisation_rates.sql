-- materialization: table
-- Seed 000's memorisation probe, per repo and model: of the probe-mode milestone runs, the share that
-- located the ground truth's files within probe_locate_turns; `warning` above memorisation_warning_rate
-- (the report and the dataset card say so: such a model has likely seen the repository's history).
-- partitioned_by: repo
-- unique: repo, model
SELECT repo, model, count(*) AS probe_runs, count(*) FILTER (WHERE located_ground_truth) AS located_runs,
    round(count(*) FILTER (WHERE located_ground_truth) / count(*), 4) AS rate,
    count(*) FILTER (WHERE located_ground_truth) / count(*) > {{ var('memorisation_warning_rate') }} AS warning
FROM {{ ref('milestone_summary') }}
WHERE mode = 'probe'
GROUP BY ALL
