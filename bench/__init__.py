"""Benchmark scripts (run as files: `python bench/NAME.py`)."""
