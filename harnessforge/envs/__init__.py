"""Environments: image recipes and builds, sandboxes, test runners, validation and grading."""
