"""Partitions. Repo keys are `owner__name`: no `|`, `,`, `/` or brackets, so they are safe as
dynamic partition keys and as one dimension of the later repo x milestone partitions."""

import dagster as dg

repo_partitions = dg.DynamicPartitionsDefinition(name="repo")
