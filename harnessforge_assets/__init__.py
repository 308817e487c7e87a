"""HarnessForge as Dagster software-defined assets. Thin: each asset calls the core library
(`harnessforge`) and returns metadata for the UI."""
