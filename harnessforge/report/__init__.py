"""Human-facing pages built from the store: the run report and the per-milestone trajectory viewer."""
