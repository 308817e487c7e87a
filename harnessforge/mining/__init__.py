"""Stage 1: from a repository's release history to a contiguous chain of milestones.

releases -> changelog -> pulls (PR attribution) -> segment -> acceptance tests, description,
hint ladder -> planner (writes the plan). `screening` decides whether a repo is worth planning.
"""
