"""Where a new data file goes when a table writes to external paths (``data-file.external-paths``).

One job: turn a table's external-path options into, for each new data file of one bucket, the
``_EXTERNAL_PATH`` Paimon would record for it, by Paimon's own rules (its ``ExternalPathProvider``
family, Paimon 1.1):

* ``data-file.external-paths``: comma-separated roots, each a URI with a scheme
  (``file:///data/t``, ``s3://bucket/t``); a file goes to ``<root>/<partition>/bucket-N/<name>``
  (below ``data-file.path-directory`` when the table sets it), the bucket's path relative to the
  table, so the layout under every root mirrors the table's own;
* ``data-file.external-paths.strategy``: ``none`` (the default: files stay in the table directory,
  whatever the roots), ``round-robin`` (the roots in turn, from a random one per bucket writer),
  ``specific-fs`` (round-robin over the roots whose scheme is
  ``data-file.external-paths.specific-fs``), ``entropy-inject`` (round-robin, with three directory
  levels of the file name's murmur3 hash in front of the name: object stores spread the keys) and
  ``weight-robin`` (a root drawn at random with ``data-file.external-paths.weights``; fewer than two
  roots or no weights: round-robin).

The recorded path is the URI as Paimon's ``Path`` prints it: ``file:/abs/...`` for a local root
(``file:///abs`` loses its empty authority), ``s3://bucket/...`` for an object store. Readers and
maintenance resolve it back with :func:`engine.meta.paths.resolve_external_path`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine.errors import InvalidArgumentError

EXTERNAL_PATHS = "data-file.external-paths"
STRATEGY = "data-file.external-paths.strategy"
SPECIFIC_FS = "data-file.external-paths.specific-fs"
WEIGHTS = "data-file.external-paths.weights"
STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$")
_ENTROPY_BITS = 20  # Paimon's EntropyInjectExternalPathProvider: 20 hash bits in 4-bit directories
_ENTROPY_DIR = 4
_ENTROPY_DEPTH = 3


def normalise_root(root: str) -> str:
    """An external root as Paimon's ``Path`` prints it (scheme kept, empty authority dropped,
    no trailing slash).

    Raises:
        InvalidArgumentError: the root has no scheme (Paimon refuses it: "scheme should not be null").
    """
    text = root.strip()
    m = _SCHEME.match(text)
    if m is None or len(m.group(1)) < 2:  # 'C:' is a Windows drive, not a scheme
        raise InvalidArgumentError(
            f"option '{EXTERNAL_PATHS}': {root!r} has no scheme; give a URI such as 'file:///data/t' "
            "or 's3://bucket/t' (Paimon requires one)")
    scheme, rest = m.group(1), m.group(2)
    if rest.startswith("///"):
        rest = "/" + rest[3:].lstrip("/")
    rest = rest.rstrip("/") or "/"
    return f"{scheme}:{rest}"


def _roots(options: Mapping[str, str], strategy: str) -> tuple[str, ...]:
    roots = [normalise_root(p) for p in str(options[EXTERNAL_PATHS]).split(",") if p.strip()]
    if strategy == "specific-fs":
        fs = str(options.get(SPECIFIC_FS) or "").strip().lower()
        if not fs:
            raise InvalidArgumentError(
                f"option '{SPECIFIC_FS}' must name a scheme (e.g. 's3') when '{STRATEGY}' is 'specific-fs'")
        roots = [r for r in roots if r.split(":", 1)[0].lower() == fs]
    if not roots:
        raise InvalidArgumentError(f"option '{EXTERNAL_PATHS}': no external path left to write to")
    return tuple(roots)


def parse_weights(text: str) -> tuple[int, ...]:
    """``'10,5,15'`` → (10, 5, 15).

    Raises:
        InvalidArgumentError: a weight is not a positive integer.
    """
    out = []
    for part in text.split(","):
        try:
            w = int(part.strip())
        except ValueError:
            w = 0
        if w <= 0:
            raise InvalidArgumentError(
                f"option '{WEIGHTS}': {part.strip()!r} is not a positive integer weight")
        out.append(w)
    return tuple(out)


@dataclass(frozen=True)
class ExternalPaths:
    """A table's external data paths: the roots and how a new file picks one."""

    roots: tuple[str, ...]
    strategy: str
    weights: tuple[int, ...] | None = None

    @staticmethod
    def of(options: Mapping[str, str]) -> ExternalPaths | None:
        """The table's external paths, or None when new files stay in the table directory
        (no roots, or strategy ``none``).

        Raises:
            InvalidArgumentError: a root without a scheme, an unknown strategy, ``specific-fs``
                without a matching root, weights that are not positive integers or do not match
                the roots in number.
        """
        text = options.get(EXTERNAL_PATHS)
        strategy = str(options.get(STRATEGY) or "none").strip().lower()
        if strategy not in STRATEGIES:
            raise InvalidArgumentError(
                f"option '{STRATEGY}' must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        if not text or not str(text).strip() or strategy == "none":
            return None
        roots = _roots(options, strategy)
        weights = None
        if strategy == "weight-robin" and options.get(WEIGHTS):
            weights = parse_weights(str(options[WEIGHTS]))
            if len(roots) >= 2 and len(weights) != len(roots):
                raise InvalidArgumentError(
                    f"option '{WEIGHTS}' gives {len(weights)} weights for {len(roots)} external paths")
        return ExternalPaths(roots, strategy, weights)

    def provider(self, relative_bucket_dir: str) -> ExternalPathProvider:
        """The chooser of one bucket writer (``relative_bucket_dir``: the bucket's directory
        relative to the table, e.g. ``dt=1/bucket-0``)."""
        return ExternalPathProvider(self, relative_bucket_dir.strip("/"))


class ExternalPathProvider:
    """Hands out the ``_EXTERNAL_PATH`` of each new file of one bucket writer."""

    def __init__(self, paths: ExternalPaths, relative_bucket_dir: str) -> None:
        self.paths = paths
        self.relative = relative_bucket_dir
        self._position = random.randrange(len(paths.roots))  # noqa: S311 - spreading, not security
        if paths.strategy == "entropy-inject":
            self._position = 0  # Paimon's entropy provider does not start at a random root

    def _next_root(self) -> str:
        roots = self.paths.roots
        if self.paths.strategy == "weight-robin" and self.paths.weights and len(roots) >= 2:
            return random.choices(roots, weights=self.paths.weights)[0]  # noqa: S311
        self._position = (self._position + 1) % len(roots)
        return roots[self._position]

    def next(self, file_name: str) -> str:
        """The external path of the new file ``file_name``."""
        root = self._next_root()
        parts = [root.rstrip("/"), self.relative]
        if self.paths.strategy == "entropy-inject":
            parts.append(entropy_dirs(file_name))
        parts.append(file_name)
        return "/".join(p for p in parts if p)


def entropy_dirs(file_name: str) -> str:
    """Paimon's entropy directories of a file name: the low 20 bits of its murmur3_32 hash (UTF-8,
    seed 0) in binary, cut into three 4-bit directories and the rest (``1001/1001/1001/10011001``)."""
    bits = format(murmur3_32(file_name.encode("utf-8")) | 0x80000000, "b")[-_ENTROPY_BITS:]
    cut = _ENTROPY_DIR * _ENTROPY_DEPTH
    dirs = [bits[i:i + _ENTROPY_DIR] for i in range(0, cut, _ENTROPY_DIR)]
    if len(bits) > cut:
        dirs.append(bits[cut:])
    return "/".join(dirs)


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (Guava's ``murmur3_32``), as an unsigned int. Used once
    per new file name, never per row."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


__all__ = [
    "STRATEGIES", "ExternalPathProvider", "ExternalPaths", "entropy_dirs", "murmur3_32", "normalise_root",
    "parse_weights",
]
