"""HarnessForge: real repositories' release history -> long-horizon coding-agent training data.

The core library. It never imports dagster: the CLI (`harnessforge.cli`) and the Dagster assets
(`harnessforge_assets`) are two thin drivers over the same functions.
"""

__version__ = "0.1.0"
