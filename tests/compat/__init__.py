"""Compatibility tests against pypaimon, which runs in its own venv via ``harness.PyPaimon``."""
