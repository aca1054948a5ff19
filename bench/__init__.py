"""procflow benchmarks: ratios against baselines measured in the same process (see bench/README.md)."""
