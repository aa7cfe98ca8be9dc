"""Storage access for dyntable: the :class:`FileIO` seam over fsspec and path helpers.

Everything in the engine reads and writes through a ``FileIO``; nothing else touches a file
system directly. ``FailingFileIO`` (fault injection for tests) lives in ``engine.io.faults``.
"""

from __future__ import annotations

from engine.io.fileio import FileIO, FileStatus, join

__all__ = ["FileIO", "FileStatus", "join"]
