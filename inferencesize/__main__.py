"""`python -m inferencesize` runs the CLI."""

from inferencesize.console import main

main()
