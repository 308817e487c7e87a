"""`python -m harnessforge.cli`: the same command as `harnessforge`."""

from . import main

if __name__ == "__main__":  # not when a tool walks the package and imports every module
    main()
