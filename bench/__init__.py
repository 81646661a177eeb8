"""Benchmarks and evals. Each entry point runs from the repository root as
`python -m bench.NAME`; what they share lives in bench/harness/. See bench/README.md."""
