"""Benchmarks: each script prints ratios against an anchor measured in the same run."""
