"""Parsing and printing option values: durations, memory sizes and booleans as Paimon writes them,
and :class:`ConfigOption`, one option's declaration (its key, type, default and checks), which
parses a value by them. The options themselves are declared in :mod:`engine.options`.

Durations take Paimon's units (``ns`` to ``d``, a bare number is milliseconds) and ISO-8601
(``PT1H``); memory sizes take binary units (``kb`` … ``tb``, a bare number is bytes). Printing
gives the shortest exact text, so a value survives a parse/print round trip.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import InvalidArgumentError

_KB, _MB, _GB, _TB = 1 << 10, 1 << 20, 1 << 30, 1 << 40


_DURATION_UNITS: dict[str, float] = {}
_names: tuple[str, ...]
for _names, _ms in (
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-6),
    (("us", "µs", "micro", "micros", "microsecond", "microseconds"), 1e-3),
    (("ms", "milli", "millis", "millisecond", "milliseconds", ""), 1),
    (("s", "sec", "secs", "second", "seconds"), 1000),
    (("m", "min", "mins", "minute", "minutes"), 60_000),
    (("h", "hour", "hours"), 3_600_000),
    (("d", "day", "days"), 86_400_000),
):
    _DURATION_UNITS.update(dict.fromkeys(_names, _ms))
_NUM_UNIT = re.compile(r"\s*(\d+)\s*([a-zµ]*)\s*", re.IGNORECASE)
_ISO = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)
_MEMORY_UNITS: dict[str, int] = {}
for _names, _bytes in (
    (("", "b", "bytes"), 1),
    (("k", "kb", "kib", "kibibytes"), _KB),
    (("m", "mb", "mib", "mebibytes"), _MB),
    (("g", "gb", "gib", "gibibytes"), _GB),
    (("t", "tb", "tib", "tebibytes"), _TB),
):
    _MEMORY_UNITS.update(dict.fromkeys(_names, _bytes))


def parse_duration(text: str) -> int:
    """Milliseconds of a duration: ``"1 h"``, ``"30min"``, ``"10 s"``, ``"100"`` (ms), ``"PT1H"``.

    Raises:
        InvalidArgumentError: not a non-negative duration.
    """
    s = text.strip()
    iso = _ISO.fullmatch(s)
    if iso and s.upper() not in ("P", "PT"):
        d, h, m, sec = iso.groups()
        return round(
            int(d or 0) * 86_400_000 + int(h or 0) * 3_600_000 + int(m or 0) * 60_000 + float(sec or 0) * 1000
        )
    m2 = _NUM_UNIT.fullmatch(s)
    if m2 is None or m2.group(2).lower() not in _DURATION_UNITS:
        raise InvalidArgumentError(
            f"{text!r} is not a duration; write a number and a unit, e.g. '1 h', '30 min', '10 s', '7 d'"
        )
    return int(int(m2.group(1)) * _DURATION_UNITS[m2.group(2).lower()])


def parse_memory_size(text: str) -> int:
    """Bytes of a memory size: ``"256 mb"``, ``"128MB"``, ``"1 gb"``, ``"1024"`` (bytes); binary units.

    Raises:
        InvalidArgumentError: not a memory size.
    """
    m = _NUM_UNIT.fullmatch(text)
    if m is None or m.group(2).lower() not in _MEMORY_UNITS:
        raise InvalidArgumentError(f"{text!r} is not a memory size; write e.g. '256 mb', '1 gb', '1024'")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def parse_bool(text: str) -> bool:
    """``true``/``false``, case-insensitive."""
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise InvalidArgumentError(f"{text!r} is not a boolean; write 'true' or 'false'")
    return low == "true"


def format_duration(ms: int) -> str:
    """The shortest exact text for a duration in milliseconds (``3600000`` → ``"1 h"``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def format_memory_size(n: int) -> str:
    """The shortest exact text for a size in bytes (``268435456`` → ``"256 mb"``)."""
    for unit, size in (("tb", _TB), ("gb", _GB), ("mb", _MB), ("kb", _KB)):
        if n and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} b"


_TYPE_NAMES = {str: "string", int: "int", bool: "boolean", float: "float"}


@dataclass(frozen=True, slots=True)
class ConfigOption:
    """One table option.

    ``type`` is ``str``, ``int``, ``bool``, ``float`` or one of ``"duration"`` (parsed to
    milliseconds), ``"memory_size"`` (bytes), ``"enum"`` (one of ``choices``, case-insensitive,
    parsed to the canonical lower-case choice) or ``"list"`` (comma list → tuple of names).
    ``default`` is the parsed value (None: no default). A ``*`` in ``key`` makes it a pattern
    whose ``*`` stands for a column name (``fields.*.aggregate-function``). ``validator`` gets
    the parsed value and returns an error text or None. ``immutable`` options cannot change once
    the table has data.
    """

    key: str
    type: Any
    default: Any
    description: str
    immutable: bool = False
    choices: tuple[str, ...] | None = None
    validator: Callable[[Any], str | None] | None = None

    @property
    def is_pattern(self) -> bool:
        return "*" in self.key

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type, self.type) if not isinstance(self.type, str) else self.type

    @property
    def default_text(self) -> str:
        """The default as a user would write it (``"1 h"``, ``"256 mb"``), or ``""`` for none."""
        d = self.default
        if d is None:
            return ""
        if self.type == "duration":
            return format_duration(d)
        if self.type == "memory_size":
            return format_memory_size(d)
        if isinstance(d, bool):
            return str(d).lower()
        if isinstance(d, tuple):
            return ",".join(d)
        return str(d)

    def expected(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return {
            "duration": "a duration such as '1 h' or '30 s'",
            "memory_size": "a memory size such as '256 mb'",
            "list": "a comma-separated list of column names",
        }.get(self.type_name, "an integer" if self.type is int else f"a {self.type_name}")

    def parse(self, text: str, key: str | None = None, *, validate: bool = True) -> Any:
        """Parse a value; InvalidArgumentError names the key, the value and what was expected.

        ``validate=False`` skips the policy checks (ranges, parquet-only, ...): used when reading
        options a table already has, which another engine may have set legitimately.
        """
        key = key or self.key
        try:
            value = self._parse(text)
        except (InvalidArgumentError, ValueError):
            raise InvalidArgumentError(
                f"option '{key}' = '{text}' is invalid: expected {self.expected()}"
            ) from None
        problem = self.validator(value) if self.validator and validate else None
        if problem:
            raise InvalidArgumentError(f"option '{key}' = '{text}' is invalid: {problem}")
        return value

    def _parse(self, text: str) -> Any:
        if not isinstance(text, str):
            raise ValueError(text)
        t = self.type
        if t is int:
            return int(text.strip())
        if t is float:
            return float(text.strip())
        if t is bool:
            return parse_bool(text)
        if t == "duration":
            return parse_duration(text)
        if t == "memory_size":
            return parse_memory_size(text)
        if t == "list":
            return tuple(p.strip() for p in text.split(",") if p.strip())
        if t == "enum":
            low = text.strip().lower()
            if self.choices is None or low not in self.choices:
                raise ValueError(text)
            return low
        return text
