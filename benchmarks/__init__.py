"""Benchmarks of skdp against scikit-learn and the anchor libraries (run with python -m)."""
