"""What statements produce: the result of one statement and a running streaming job.

Shared by the session (which returns them) and the executors (which build them), below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from sqlext.parse.splitter import Statement


@dataclass
class StatementResult:
    """What one statement produced: rows to show and/or a status message."""

    statement: Statement
    dataframe: DataFrame | None = None
    message: str | None = None


@dataclass
class StreamingJob:
    job_id: str
    statement: str
    query: Any  # pyspark StreamingQuery

    @property
    def status(self) -> str:
        if self.query.isActive:
            return "RUNNING"
        return "FAILED" if self.query.exception() is not None else "FINISHED"
