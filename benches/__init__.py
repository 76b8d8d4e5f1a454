"""Benchmarks: `python -m benches` runs every bench_*.py module and prints its figures."""
