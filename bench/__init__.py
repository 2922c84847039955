"""Benchmarks: `python -m bench` runs them all and prints the side-by-side table (docs/benchmarks.md)."""
