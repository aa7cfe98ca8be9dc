"""Turn query results (Arrow) and statement errors into the text `dyntable-sql` prints.

Four result formats: ``table`` (aligned columns between +---+ borders, for people), and ``tsv``,
``csv`` and ``json`` (JSON lines, for programs).

Invariants:
* values become text column by column with pyarrow compute (casts, joins, regex replaces); no
  Python loop runs over every cell of a batch. Only ``table`` loops in Python, over the at most
  ``--max-rows`` rows it prints, to align them; binary and exotic types fall back to per-value
  Python because Arrow has no kernel for them;
* ``tsv``, ``csv`` and ``json`` are exact: never truncated or abbreviated, one line per row;
* ``table`` shows NULL as ``NULL`` and, by default, every value whole, as spark-sql and psql do: a
  value with line breaks (``SHOW CREATE TABLE``) spans several lines of its cell, each continued
  line marked with ``+`` in the gutter as psql marks it. With a ``max_width`` (``--max-width N``,
  ``%config SqlMagic.max_width = N``) each value is one line, its line breaks escaped, and values
  longer than ``N`` characters end in ``...``;
* nested values (arrays, maps, structs) print as JSON-like text in every format, as spark-sql
  does: ``[1,2]``, ``{"k":1}``, ``{"x":1,"y":"a"}``;
* error text never holds a Python traceback unless asked for (``verbose``); an internal error
  (a bug) says where its traceback is, in the words of the caller's front end (``hint``).
"""

from __future__ import annotations

import base64
import re
import traceback
import unicodedata
from typing import Literal, TextIO

import pyarrow as pa
import pyarrow.compute as pc

from sqlext.errors import INTERNAL_ERROR, SqlError, sqlstate_for

OutputFormat = Literal["table", "tsv", "csv", "json"]
OUTPUT_FORMATS: tuple[str, ...] = ("table", "tsv", "csv", "json")

NULL_TEXT = "NULL"
WHOLE_VALUES = 0  # the default max_width: no value is cut
ELLIPSIS = "..."  # ASCII, so that a terminal without UTF-8 still prints it
STREAM_BATCH_ROWS = 65536

_Mode = Literal["display", "json"]
_STRING = pa.string()


# --------------------------------------------------------------------------- values to text


def column_text(array: pa.Array | pa.ChunkedArray, mode: _Mode = "display") -> pa.Array:
    """Render every value of a column as text, keeping nulls as nulls.

    Args:
        array: one column (a chunked column is combined first).
        mode: ``"display"`` prints top-level strings, dates and times bare (table, tsv, csv);
            ``"json"`` prints every value as a JSON literal (strings quoted, NaN as ``"NaN"``).

    Returns:
        A string array as long as ``array``.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return _text(array, quoted=(mode == "json"), json=(mode == "json"))


def _text(arr: pa.Array, *, quoted: bool, json: bool) -> pa.Array:
    """Text of ``arr``; ``quoted`` wraps strings/temporals as JSON strings (nested or JSON output)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return _text(arr.dictionary_decode(), quoted=quoted, json=json)
    if isinstance(t, pa.ExtensionType):
        return _text(arr.storage, quoted=quoted, json=json)
    if pa.types.is_null(t):
        return pa.nulls(len(arr), _STRING)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        text = arr.cast(_STRING)
        return json_quote(text) if quoted else text
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
        return arr.cast(_STRING)
    if pa.types.is_floating(t):
        return _float_text(arr, json=json)
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            arr = pc.local_timestamp(arr)  # the wall clock of the column's zone, as Spark shows it
        text = trim_fraction(arr.cast(_STRING))
        return json_quote(text) if quoted else text
    if pa.types.is_date(t) or pa.types.is_time(t):
        text = trim_fraction(arr.cast(_STRING)) if pa.types.is_time(t) else arr.cast(_STRING)
        return json_quote(text) if quoted else text
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _binary_text(arr, quoted=quoted, json=json)
    if pa.types.is_map(t):
        return _map_text(arr, json=json)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _list_text(arr, json=json)
    if pa.types.is_struct(t):
        return _struct_text(arr, json=json)
    return _fallback_text(arr, quoted=quoted)


def json_quote(text: pa.Array) -> pa.Array:
    """Quote and escape a string array as JSON string literals (nulls stay null)."""
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    for raw, escaped in (("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f")):
        text = pc.replace_substring(text, raw, escaped)
    # Other control characters are rare: test once for the column before 27 more passes.
    if len(text) and pc.any(pc.match_substring_regex(text, r"[\x00-\x1f]")).as_py():
        for code in range(32):
            if chr(code) not in "\n\r\t\b\f":
                text = pc.replace_substring(text, chr(code), f"\\u{code:04x}")
    return pc.binary_join_element_wise('"', text, '"', "")


def _float_text(arr: pa.Array, *, json: bool) -> pa.Array:
    text = arr.cast(_STRING)
    # Arrow prints 1.0 as "1"; Spark prints "1.0": a float stays visibly a float.
    integral = pc.match_substring_regex(text, r"^-?\d+$")
    text = pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)
    text = pc.replace_substring_regex(text, "^nan$", '"NaN"' if json else "NaN")
    text = pc.replace_substring_regex(text, "^inf$", '"Infinity"' if json else "Infinity")
    return pc.replace_substring_regex(text, "^-inf$", '"-Infinity"' if json else "-Infinity")


def trim_fraction(text: pa.Array) -> pa.Array:
    """Drop a timestamp's trailing zero fraction digits, as Spark prints them (``10:00:00.5``)."""
    text = pc.replace_substring_regex(text, r"\.0+$", "")
    return pc.replace_substring_regex(text, r"(\.\d*?[1-9])0+$", r"\1")


def _binary_text(arr: pa.Array, *, quoted: bool, json: bool) -> pa.Array:
    # Arrow has no hex/base64 kernel; binary columns are rare enough for per-value Python.
    if json:
        values = [None if b is None else base64.b64encode(b).decode("ascii") for b in arr.to_pylist()]
        return json_quote(pa.array(values, _STRING))
    values = [None if b is None else "[" + b.hex(" ").upper() + "]" for b in arr.to_pylist()]
    text = pa.array(values, _STRING)
    return json_quote(text) if quoted else text


def _fallback_text(arr: pa.Array, *, quoted: bool) -> pa.Array:
    try:
        text = arr.cast(_STRING)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        text = pa.array([None if v is None else str(v) for v in arr.to_pylist()], _STRING)
    return json_quote(text) if quoted else text


def _nested(arr: pa.Array, *, json: bool) -> pa.Array:
    """Text of a value inside an array/map/struct: always a JSON-like literal, null as ``null``."""
    return _text(arr, quoted=True, json=json).fill_null("null")


def _join_lists(offsets: pa.Array, items: pa.Array, parent: pa.Array, open_: str, close: str) -> pa.Array:
    """Join each list's item texts with ``,`` between ``open_`` and ``close``; null lists stay null."""
    start = offsets[0].as_py()
    rebased = pc.subtract(offsets, pa.scalar(start, offsets.type))
    lists_type = pa.large_list(_STRING) if pa.types.is_int64(offsets.type) else pa.list_(_STRING)
    cls = pa.LargeListArray if pa.types.is_int64(offsets.type) else pa.ListArray
    lists = cls.from_arrays(rebased, items, type=lists_type, mask=parent.is_null())
    return pc.binary_join_element_wise(open_, pc.binary_join(lists, ","), close, "")


def _offsets_and_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A list array's offsets and exactly the child values they span (slicing honoured)."""
    if pa.types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        first = arr.offset * size
        offsets = pa.array(range(first, first + (len(arr) + 1) * size, size), pa.int32())
        return offsets, arr.values
    return arr.offsets, arr.values


def _list_text(arr: pa.Array, *, json: bool) -> pa.Array:
    offsets, values = _offsets_and_values(arr)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    items = _nested(values.slice(start, end - start), json=json)
    return _join_lists(offsets, items, arr, "[", "]")


def _map_text(arr: pa.Array, *, json: bool) -> pa.Array:
    offsets = arr.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    keys = arr.keys.slice(start, end - start)
    if json and not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        key_text = json_quote(_text(keys, quoted=False, json=False))  # JSON object keys are strings
    else:
        key_text = _text(keys, quoted=True, json=json)  # numbers stay bare: {1:"a"}, {"a":1}
    entries = pc.binary_join_element_wise(
        key_text.fill_null("null"), _nested(arr.items.slice(start, end - start), json=json), ":"
    )
    return _join_lists(offsets, entries, arr, "{", "}")


def _struct_text(arr: pa.Array, *, json: bool) -> pa.Array:
    fields = arr.flatten()  # honours slicing; a null struct's children read as null too
    if not fields:
        text = pa.array(["{}"] * len(arr), _STRING)
    else:
        parts: list[pa.Array | str] = []
        for i, (field, child) in enumerate(zip(arr.type, fields, strict=True)):
            name = _json_string(field.name)
            parts.append(("{" if i == 0 else ",") + name + ":")
            parts.append(_nested(child, json=json))
        parts.append("}")
        text = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(arr.is_null(), pa.scalar(None, _STRING), text)


def _json_string(value: str) -> str:
    return str(json_quote(pa.array([value], _STRING))[0].as_py())


# --------------------------------------------------------------------------- table format


def _display_width(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - _display_width(text))
    return fill + text if right else text + fill


def _is_numeric(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def table_cells(array: pa.Array | pa.ChunkedArray, max_width: int = WHOLE_VALUES) -> list[str]:
    """The cells of one column as the ``table`` format shows them.

    Args:
        array: the column (only the rows to print).
        max_width: 0 (the default) shows every value whole, its line breaks kept for
            :func:`render_table` to lay out on several lines; ``N > 0`` makes every cell one line
            (line breaks escaped) of at most ``N`` characters, longer values ending in ``...``.

    Returns:
        One string per row: NULL for nulls, tabs and carriage returns escaped.
    """
    text = column_text(array, "display").fill_null(NULL_TEXT)
    text = pc.replace_substring(text, "\r\n", "\n")  # one line break, whatever wrote it
    escapes = [("\r", "\\r"), ("\t", "\\t")]
    if max_width > 0:
        escapes.insert(0, ("\n", "\\n"))  # one line per value
    for raw, escaped in escapes:
        text = pc.replace_substring(text, raw, escaped)
    if max_width > 0 and len(text):
        # Too narrow for the ellipsis: a plain cut (still within the width asked for).
        mark = ELLIPSIS if max_width > len(ELLIPSIS) else ""
        long = pc.greater(pc.utf8_length(text), max_width)
        head = pc.utf8_slice_codeunits(text, 0, max_width - len(mark))
        text = pc.if_else(long, pc.binary_join_element_wise(head, mark, ""), text)
    cells: list[str] = text.to_pylist()
    return cells


def render_table(table: pa.Table, max_width: int = WHOLE_VALUES) -> str:
    """Render ``table`` as aligned columns with a header between ``+---+`` borders.

    Args:
        table: the rows to print (already limited to the rows wanted).
        max_width: 0 shows values whole (a multi-line value takes several lines, each but its
            last marked ``+`` after the cell); ``N > 0`` cuts values to ``N`` characters on one line.

    Returns:
        The lines, each ending in a newline; empty when the table has no columns. Numbers are
        right-aligned, everything else left-aligned.
    """
    if table.num_columns == 0:
        return ""
    columns = [[cell.split("\n") for cell in table_cells(col, max_width)] for col in table.columns]
    names = [name.replace("\n", "\\n") for name in table.column_names]
    widths = [
        max([_display_width(names[i])] + [_display_width(part) for cell in cells for part in cell])
        for i, cells in enumerate(columns)
    ]
    right = [_is_numeric(field.type) for field in table.schema]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+\n"

    def lines(cells: list[list[str]], align: list[bool]) -> str:
        out = []
        for i in range(max(len(cell) for cell in cells)):
            parts = []
            for cell, w, r in zip(cells, widths, align, strict=True):
                part = cell[i] if i < len(cell) else ""
                gutter = "+" if i < len(cell) - 1 else " "  # psql's mark: this value goes on
                parts.append(" " + _pad(part, w, r) + gutter)
            out.append("|" + "|".join(parts) + "|\n")
        return "".join(out)

    out = [border, lines([[n] for n in names], [False] * len(names)), border]
    out.extend(lines(list(row), right) for row in zip(*columns, strict=True))
    out.append(border)
    return "".join(out)


def row_count_text(rows: int) -> str:
    """``1 row`` / ``3 rows``."""
    return f"{rows} row" if rows == 1 else f"{rows} rows"


# --------------------------------------------------------------------------- tsv / csv / json


def _tsv_escape(text: pa.Array) -> pa.Array:
    # A field must not hold the separators: backslash escapes as in PostgreSQL's text format.
    text = pc.replace_substring(text, "\\", "\\\\")
    for raw, escaped in (("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r")):
        text = pc.replace_substring(text, raw, escaped)
    return text


def _csv_quote(text: pa.Array) -> pa.Array:
    """RFC 4180 quoting: quote a field holding a comma, quote or line break; the empty string is ``""``."""
    needs = pc.or_(pc.match_substring_regex(text, r'[,"\r\n]'), pc.equal(text, ""))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, text)


def _join_lines(lines: pa.Array) -> str:
    """Concatenate a string array into one text, a newline after every element."""
    if len(lines) == 0:
        return ""
    whole = pa.LargeListArray.from_arrays(
        pa.array([0, len(lines)], pa.int64()), lines.cast(pa.large_string())
    )
    return str(pc.binary_join(whole, pa.scalar("\n", pa.large_string()))[0].as_py()) + "\n"


def header_line(names: list[str], fmt: OutputFormat) -> str:
    """The header line of ``tsv``/``csv`` output (``json`` and ``table`` have none here).

    Args:
        names: the column names.
        fmt: ``"tsv"`` or ``"csv"``.

    Returns:
        The line with its newline.
    """
    text = pa.array(names, _STRING)
    text = _tsv_escape(text) if fmt == "tsv" else _csv_quote(text)
    return ("\t" if fmt == "tsv" else ",").join(text.to_pylist()) + "\n"


def batch_lines(batch: pa.RecordBatch | pa.Table, fmt: OutputFormat) -> str:
    """The lines of ``tsv``, ``csv`` or ``json`` output for one batch of rows.

    Args:
        batch: the rows.
        fmt: ``"tsv"`` (NULL for nulls, backslash escapes), ``"csv"`` (empty field for nulls,
            RFC 4180 quoting) or ``"json"`` (one JSON object per row).

    Returns:
        The text, one line per row, each ending in a newline.
    """
    if batch.num_rows == 0:
        return ""
    if batch.num_columns == 0:
        return ("{}\n" if fmt == "json" else "\n") * int(batch.num_rows)
    if fmt == "json":
        parts: list[pa.Array | str] = []
        for i, (name, col) in enumerate(zip(batch.column_names, batch.columns, strict=True)):
            parts.append(("{" if i == 0 else ",") + _json_string(name) + ":")
            parts.append(column_text(col, "json").fill_null("null"))
        parts.append("}")
        return _join_lines(pc.binary_join_element_wise(*parts, ""))
    if fmt == "tsv":
        cols = [_tsv_escape(column_text(col)).fill_null(NULL_TEXT) for col in batch.columns]
        sep = "\t"
    elif fmt == "csv":
        cols = [_csv_quote(column_text(col)).fill_null("") for col in batch.columns]
        sep = ","
    else:
        raise ValueError(f"batch_lines formats tsv, csv or json, not {fmt!r}")
    return _join_lines(pc.binary_join_element_wise(*cols, sep))


def write_stream(
    table: pa.Table, fmt: OutputFormat, out: TextIO, *, batch_rows: int = STREAM_BATCH_ROWS
) -> None:
    """Write ``table`` in ``tsv``, ``csv`` or ``json`` format, batch by batch.

    Args:
        table: the rows.
        fmt: ``"tsv"``, ``"csv"`` or ``"json"``.
        out: the text stream to write to.
        batch_rows: rows formatted at a time (bounds the memory of the text).
    """
    if fmt in ("tsv", "csv"):
        out.write(header_line(table.column_names, fmt))
    for batch in table.to_batches(max_chunksize=batch_rows):
        out.write(batch_lines(batch, fmt))


# --------------------------------------------------------------------------- errors

# Spark appends the analysed plan after "SQLSTATE: xxxxx; line L pos P;": noise for a user.
_SPARK_PLAN_TAIL = re.compile(r"(SQLSTATE: \w{5}(?:; line \d+ pos \d+)?);[ \t]*\n.*\Z", re.S)
_JVM_TRACE = "\n\nJVM stacktrace:"


def _spark_sqlstate(error: BaseException) -> str | None:
    getter = getattr(error, "getSqlState", None)
    if not callable(getter):
        return None
    try:
        state = getter()
    except Exception:  # a captured JVM error whose JVM is gone: fall back to the generic state
        return None
    return state if isinstance(state, str) and state else None


def spark_message(text: str) -> str:
    """A pyspark error's text without the JVM stack trace and the analysed plan Spark appends."""
    cut = text.find(_JVM_TRACE)
    if cut >= 0:
        text = text[:cut]
    text = _SPARK_PLAN_TAIL.sub(r"\1", text)
    return text.strip()


CLI_TRACEBACK_HINT = "(run with --verbose for the traceback)"


def format_error(error: BaseException, *, script: str | None = None, verbose: bool = False,
                 hint: str | None = CLI_TRACEBACK_HINT) -> str:
    """The text printed on stderr for a failed statement.

    Args:
        error: what the statement raised.
        script: the script the statement came from, to show the failing source line.
        verbose: append the Python traceback.
        hint: where the traceback of an internal error can be had, when ``verbose`` is off
            (each front end names its own way: a flag, a setting, a server log).

    Returns:
        ``Error [SQLSTATE] message`` followed by the caret snippet of a SQL error (several lines,
        without a trailing newline).
    """
    if isinstance(error, SqlError):
        if script is not None and error.snippet is None:
            error.with_source(script)
        state, message = error.sqlstate, str(error)
    else:
        if hasattr(error, "getSqlState"):  # a pyspark error (AnalysisException, ParseException, ...)
            state, message = _spark_sqlstate(error) or sqlstate_for(error), spark_message(str(error))
        else:
            state = sqlstate_for(error)
            message = str(error)
            if state == INTERNAL_ERROR:
                # Not an error dyntable names: say what Python raised so that it can be reported.
                message = f"{type(error).__name__}: {message}" if message else type(error).__name__
                if not verbose and hint:
                    message += f"\n  {hint}"
    text = f"Error [{state}] {message}"
    if verbose:
        text += "\n" + "".join(traceback.format_exception(error)).rstrip()
    return text
