"""Dagster sensors (new upstream release tags, new trajectories) arrive with the Dagster issue;
`harnessforge_assets.definitions` collects them from here."""
