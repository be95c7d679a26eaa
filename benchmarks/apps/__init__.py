"""Applications served by every server in the benchmark harness."""
