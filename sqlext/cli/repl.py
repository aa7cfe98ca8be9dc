"""The interactive prompt of `dyntable-sql`: read lines until a statement is complete, run it, repeat.

Invariants:
* a buffer is sent to be run only up to its last `;` outside quotes and comments (the lexical
  rules are the splitter's); text after that `;` stays in the buffer for the next line;
* an input holding only whitespace and comments is dropped, never run;
* ``quit;`` / ``exit;`` or end of input (Ctrl-D) leave with exit code 0; a failing statement is
  reported by the runner and the loop goes on; Ctrl-C at the prompt clears the buffer;
* line editing and history (``~/.dyntable_sql_history``) come from ``readline`` when it exists and
  input comes from the terminal; without it the loop still works.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TextIO

from sqlext.errors import SqlParseError
from sqlext.parse.splitter import comment_end, quoted_end, skip_trivia, split_statements

HISTORY_FILE = "~/.dyntable_sql_history"
HISTORY_LENGTH = 1000

_PLAIN = re.compile(r"""[^'"`;/-]+""")
_EXIT_WORDS = frozenset({"quit", "exit"})


def complete_end(text: str) -> int:
    """Where the complete statements of ``text`` end.

    Args:
        text: the lines typed so far.

    Returns:
        The index just past the last `;` outside quotes and comments, or -1 when there is none
        (including when a quote or comment is still open before any `;`).
    """
    last, pos, n = -1, 0, len(text)
    while pos < n:
        ch = text[pos]
        if ch in "'\"`":
            pos = quoted_end(text, pos)
        elif text.startswith("--", pos):
            nl = text.find("\n", pos)
            pos = -1 if nl < 0 else nl + 1
        elif text.startswith("/*", pos):
            pos = comment_end(text, pos)
        elif ch == ";":
            last = pos = pos + 1
        else:
            m = _PLAIN.match(text, pos)
            pos = m.end() if m else pos + 1
        if pos < 0:  # an open quote or comment: nothing after it can end a statement yet
            break
    return last


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing but whitespace and closed comments."""
    return skip_trivia(text, 0) >= len(text)


def prompts(database: str) -> tuple[str, str]:
    """The main prompt ``dyntable-sql (db)> `` and a continuation prompt ending in ``-> `` under it."""
    main = f"dyntable-sql ({database})> "
    return main, " " * (len(main) - 3) + "-> "


def stream_reader(stdin: TextIO, out: TextIO) -> Callable[[str], str]:
    """A ``read_line`` for :func:`run_repl` that prints the prompt on ``out`` and reads ``stdin``.

    Args:
        stdin: the input stream.
        out: where prompts go.

    Returns:
        A function like :func:`input`: it returns the line without its newline and raises
        :class:`EOFError` at the end of input.
    """

    def read_line(prompt: str) -> str:
        out.write(prompt)
        out.flush()
        line = stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    return read_line


def _split_exit(chunk: str) -> tuple[str, bool]:
    """The part of ``chunk`` before a ``quit``/``exit`` statement, and whether one was found."""
    try:
        statements = split_statements(chunk)
    except SqlParseError:
        return chunk, False  # the runner reports the syntax error
    for statement in statements:
        if statement.text.strip().lower() in _EXIT_WORDS:
            return chunk[: statement.offset], True
    return chunk, False


def _load_history(history_file: str | None) -> Callable[[], None]:
    """Load readline history; return the function that saves it (a no-op without readline)."""
    if history_file is None:
        return lambda: None
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline: no editing, no history
        return lambda: None
    path = os.path.expanduser(history_file)
    try:
        readline.read_history_file(path)
    except OSError:
        pass  # first run: no history yet
    readline.set_history_length(HISTORY_LENGTH)

    def save() -> None:
        try:
            readline.write_history_file(path)
        except OSError:
            pass  # an unwritable home must not turn a clean exit into an error

    return save


def run_repl(
    run: Callable[[str], int],
    *,
    database: Callable[[], str],
    read_line: Callable[[str], str] = input,
    out: TextIO | None = None,
    history_file: str | None = None,
) -> int:
    """Run the interactive loop until ``quit;``, ``exit;`` or end of input.

    Args:
        run: runs a script of complete statements and reports its results and errors itself
            (its return code is ignored: the loop goes on after a failure).
        database: the current database, for the prompt (it changes with ``USE``).
        read_line: reads one line after showing a prompt; raises :class:`EOFError` at the end.
        out: where to echo a newline at Ctrl-C / Ctrl-D (the terminal); none when ``None``.
        history_file: the readline history file to load and save, or ``None`` for no history.

    Returns:
        The exit code: 0.
    """
    save_history = _load_history(history_file)
    buffer = ""
    try:
        while True:
            main, more = prompts(database())
            try:
                line = read_line(more if buffer else main)
            except EOFError:
                if out is not None:
                    out.write("\n")
                return 0
            except KeyboardInterrupt:
                if out is not None:
                    out.write("^C\n")
                buffer = ""
                continue
            buffer = f"{buffer}\n{line}" if buffer else line
            end = complete_end(buffer)
            if end < 0:
                if is_blank(buffer):
                    buffer = ""
                continue
            chunk, rest = buffer[:end], buffer[end:]
            buffer = "" if is_blank(rest) else rest.lstrip()
            chunk, leave = _split_exit(chunk)
            if not is_blank(chunk):
                run(chunk)
            if leave:
                return 0
    finally:
        save_history()
