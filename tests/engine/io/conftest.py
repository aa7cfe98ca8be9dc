"""The FileIO tests use the session-wide S3 fixtures of ``tests/conftest.py``."""

from tests.conftest import BUCKET  # noqa: F401  (imported by the S3 tests)
