"""The table-option reference (``docs/options.md``), generated from the declarations in
``engine.options``: ``python -m engine.options_doc > docs/options.md`` (a test keeps it current).
"""

from __future__ import annotations

from engine.options import ALL_OPTIONS


def options_reference_markdown() -> str:
    """A Markdown table of every option: key, type, default, whether it can change, description."""
    rows = ["| key | type | default | alterable | description |", "|---|---|---|---|---|"]
    for o in sorted(ALL_OPTIONS, key=lambda o: o.key):
        typ = o.type_name + (f" ({' / '.join(o.choices)})" if o.choices else "")
        default = f"`{o.default_text}`" if o.default_text else "(none)"
        desc = o.description.replace("|", "\\|")
        rows.append(f"| `{o.key}` | {typ} | {default} | {'no' if o.immutable else 'yes'} | {desc} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(
        "# Table options\n\nGenerated from `engine/options.py` (`python -m engine.options_doc > "
        "docs/options.md`); "
        "a test keeps it in sync.\n\n" + options_reference_markdown(),
        end="",
    )
