"""Paimon's data-file indexes (bloom filter, bitmap) in Paimon's exact on-disk format.

A table with ``file-index.bloom-filter.columns`` / ``file-index.bitmap.columns`` gets, for each
data file, one blob holding every configured index of that file (:mod:`.format`), built from the
Arrow rows written into the file (:mod:`.writer`, with :mod:`.bloom`, :mod:`.bitmap` and the value
hashes of :mod:`.hashing`). Scans read it back (:mod:`.reader`) to skip files an equality or IN
filter cannot match. The package knows no storage: callers hand it rows and blobs and store the
blob where :class:`~.writer.FileIndexBlob` says (manifest or ``.index`` file).
"""

from engine.fileindex.format import INDEX_FILE_SUFFIX, read_file_index, write_file_index
from engine.fileindex.options import FileIndexConfig, check_file_index_options, file_index_config
from engine.fileindex.reader import FileIndexReader
from engine.fileindex.writer import FileIndexBlob, build_blob, build_indexes

__all__ = [
    "INDEX_FILE_SUFFIX",
    "FileIndexBlob",
    "FileIndexConfig",
    "FileIndexReader",
    "build_blob",
    "build_indexes",
    "check_file_index_options",
    "file_index_config",
    "read_file_index",
    "write_file_index",
]
