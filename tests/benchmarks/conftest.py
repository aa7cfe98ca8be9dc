"""The benchmark smoke tests that need Spark (W3c) use the run's one SparkSession (tests/conftest.py)."""
