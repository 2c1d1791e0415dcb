"""`python -m inferencesize` runs the CLI."""

from inferencesize.cli import main

main()
