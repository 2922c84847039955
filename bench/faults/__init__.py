"""Held-out fault trial (issue 36): bench/faults/run_faults.py."""
