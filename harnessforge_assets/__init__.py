"""The Dagster layer: thin assets over the core library, partitions, checks, jobs and `Definitions`."""

import warnings

import dagster as dg

# Partitioned asset checks (one result per repo or milestone, not one for all) are a preview feature
# of Dagster 1.13; they are what the checks need, and tests pin the behaviour relied on.
warnings.filterwarnings("ignore", "Specifying a partitions_def on an AssetCheckSpec", dg.PreviewWarning)
