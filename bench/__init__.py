"""Benchmarks side by side with kube-scheduler; run from the repository root as python -m bench.<name>."""
