"""`python -m infersize` runs the CLI, the same entry point as the `infersize` script."""

from inferencesize.console import main

main()
