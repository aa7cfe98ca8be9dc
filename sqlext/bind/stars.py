"""Stars over views that carry Paimon's metadata columns, spelled out so they never show them.

A binding reads ``_ROW_ID``, ``__paimon_file_path``, ... only when the statement names them
(``sqlext.bind.rewrite``); the view then has them as ordinary columns, which Spark's ``*`` would
expand. Paimon's ``SELECT *`` hides them, so a star whose sources include such a view becomes the
list of what it would show without them: ``t.*`` the table's own columns, qualified; ``*`` each
source of its SELECT in FROM order, a view with metadata columns spelled out, any other source
as ``<name>.*``. When a source has no name to qualify it with, the star stays as written.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlext.bind.scope import Reference, StarUse


def spelled_star(
    sql: str, star: StarUse, view_of: dict[int, str], hides: dict[int, bool],
    qualifier_edits: list[tuple[int, int, Reference]], quote: Callable[[str], str],
) -> str | None:
    """The text replacing ``star`` in ``sql`` (None: it stays: nothing hidden is under it, or a
    source has no name). ``view_of``: each reference's view; ``hides``: the references whose view
    carries metadata columns; ``qualifier_edits``: the binder's rewrites of qualifiers (``db.t`` to
    ``t``), which a spelled ``t.*`` applies itself; ``quote``: Spark identifier quoting."""

    def qualifier(ref: Reference, keys: frozenset[tuple[str, ...]]) -> str | None:
        if ref.qualify_by_view:
            return view_of[id(ref)]
        if ref.alias_text is not None:
            return ref.alias_text
        ones = sorted(k[0] for k in keys if len(k) == 1)
        return quote(ones[0]) if ones else None

    def spelled(q: str, ref: Reference) -> str:
        return ", ".join(f"{q}.{quote(c)}" for c in ref.table_columns)

    if star.ref is not None:
        ref = star.ref
        if not hides.get(id(ref)) or star.qualifier is None:
            return None
        qs, qe = star.qualifier
        q = sql[qs:qe]
        for start, end, edited in qualifier_edits:
            if (start, end) == (qs, qe) and edited is ref:
                q = view_of[id(ref)] if ref.qualify_by_view else (ref.alias_text or q)
        return spelled(q, ref)
    if star.frame is None or not any(s.ref is not None and hides.get(id(s.ref)) for s in star.frame.sources):
        return None
    parts: list[str] = []
    for source in star.frame.sources:
        if source.ref is not None:
            named = qualifier(source.ref, source.keys)
            if named is None:
                return None
            parts.append(spelled(named, source.ref) if hides.get(id(source.ref)) else f"{named}.*")
            continue
        ones = sorted(k[0] for k in source.keys if len(k) == 1)
        if not ones:
            return None
        parts.append(f"{quote(ones[0])}.*")
    return ", ".join(parts)
