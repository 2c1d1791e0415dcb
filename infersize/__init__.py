"""``python -m infersize``: the command's own name runs the CLI (the package is
:mod:`inferencesize`)."""
