"""`python -m harnessforge.cli`: the same command as `harnessforge`."""

from . import main

main()
