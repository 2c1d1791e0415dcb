"""Presentation of results: JSON records (the output schema) and terminal tables. Computes
nothing the solvers do not already know; prints nothing (callers emit the text)."""
