"""Benchmarks and the synthetic data they (and a small quality test) share."""
