"""What the ``%sql`` magic shows: result tables (HTML and text), progress bars and error text.

Cell text comes from ``sqlext.output`` (the same NULL, escaping, nested-value and cutting rules
as ``dyntable-sql``: values whole unless ``SqlMagic.max_width`` says otherwise); this module only
wraps it in HTML (escaped) or in the CLI's text table.
Errors read exactly as ``dyntable-sql`` prints them: ``Error [SQLSTATE] message`` and the caret.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pyarrow as pa

from sqlext.notebook.progress import Progress
from sqlext.output import format_error, render_table, row_count_text, table_cells

_CLI_HINT = "(run with --verbose for the traceback)"
_NOTEBOOK_HINT = "(%config SqlMagic.short_errors = False shows the traceback)"


@dataclass(frozen=True)
class Shown:
    """The rows of a result fetched for display, with what is known of the rest."""

    table: pa.Table
    truncated: bool  # there are more rows than shown
    elapsed: float | None = None  # seconds the cell's statements took
    max_width: int = 0  # 0: values whole; N: cut to N characters (SqlMagic.max_width)

    @property
    def note(self) -> str:
        shown = self.table.num_rows
        note = f"showing first {shown} rows, more available" if self.truncated else row_count_text(shown)
        return note + (f" ({self.elapsed:.2f} s)" if self.elapsed is not None else "")

    def text(self) -> str:
        """The ``dyntable-sql`` table, then the row count."""
        return render_table(self.table, self.max_width) + self.note

    def html(self) -> str:
        """An HTML table: escaped cells, numbers right-aligned, column types as header tooltips."""
        t = self.table
        head = "".join(f'<th title="{html.escape(str(f.type))}">{html.escape(f.name)}</th>' for f in t.schema)
        columns = [table_cells(col, self.max_width) for col in t.columns]
        right = [_numeric(f.type) for f in t.schema]
        body = []
        for row in zip(*columns, strict=True):
            cells = (_html_cell(c, r) for c, r in zip(row, right, strict=True))
            body.append("<tr>" + "".join(cells) + "</tr>")
        table = (
            f'<table class="dyntable-result"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
            if t.num_columns
            else ""
        )
        return f"<div>{table}<small>{html.escape(self.note)}</small></div>"


def _html_cell(text: str, numeric: bool) -> str:
    if numeric:
        return f'<td style="text-align:right">{html.escape(text)}</td>'
    if "\n" in text:  # a multi-line value (SHOW CREATE TABLE) keeps its lines, left-aligned
        return f'<td style="text-align:left;white-space:pre">{html.escape(text)}</td>'
    return f"<td>{html.escape(text)}</td>"


def _numeric(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def fetch(frame: object, limit: int | None) -> tuple[pa.Table, bool]:
    """The first ``limit`` rows of a Spark DataFrame (all with None) and whether there are more.

    One row past the limit tells whether more exist without fetching them.
    """
    if limit is None:
        return frame.toArrow(), False  # type: ignore[attr-defined]
    table: pa.Table = frame.limit(limit + 1).toArrow()  # type: ignore[attr-defined]
    if table.num_rows > limit:
        return table.slice(0, limit), True
    return table, False


def error_text(error: BaseException, script: str) -> str:
    """The error as ``dyntable-sql`` prints it (caret under the offending text of ``script``)."""
    return format_error(error, script=script).replace(_CLI_HINT, _NOTEBOOK_HINT)


def progress_bundle(progress: Progress) -> dict[str, str]:
    """A display bundle for the progress bar: an HTML ``<progress>`` element and a text fallback."""
    text = html.escape(progress.text)
    if progress.total:
        bar = f'<progress value="{progress.done}" max="{progress.total}" style="width:20em"></progress> '
    else:
        bar = '<progress style="width:20em"></progress> '  # indeterminate: no stage is running
    return {"text/plain": progress.text, "text/html": f"<div>{bar}<code>{text}</code></div>"}
