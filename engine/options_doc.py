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


RULE = """\
## Which keys a table accepts

One rule for every place a table's options are set — `CREATE TABLE … WITH (…)` /
`TBLPROPERTIES (…)`, `ALTER TABLE … SET`, `CREATE TABLE … LIKE`, the table defaults of a catalog
(`table-default.*`), `Table.with_options(…)` in Python — and for every client (`dyntable-sql`, notebooks,
PySpark, `dyntable-server`'s JDBC/PyHive/dbt/BI clients):

* **An option in the table below** must have a value of its type and range, or the statement is
  refused with the reason. An option marked "no" under *alterable* cannot change once the table
  has data.
* **A Paimon option dyntable cannot honour** (`data-file.external-paths`,
  `record-level.expire-time`, … — [procedures.md](procedures.md#table-properties-and-options)
  lists them) is refused with the reason, never silently ignored.
* **Paimon's other options** (those of Paimon's core, Flink and Spark connectors that dyntable
  does not interpret, such as `changelog-file.compression` or `sink.parallelism`) and **any
  other key** (`'k1' = 'v1'`, `'myteam.owner' = 'analytics'`) are stored as given, as Paimon
  stores them, and shown by `SHOW TBLPROPERTIES`; Java jobs sharing the table see them.
* **A near miss of a known option** (`'bukcet'`, `'merge-engin'`, `'snapshot.num-retained.mx'`)
  is refused, naming the option it likely means: `option 'bukcet' is not a table option dyntable
  or Paimon knows. Did you mean 'bucket'?` A refusal is the one answer every client shows: a
  warning would reach neither dbt nor a BI tool (HiveServer2's only side channel is the
  operation log, which they do not show), and a misspelt `bucket` cannot be corrected once the
  table has data. Give a property of your own a name apart from the options' names (under a
  prefix of your own, such as `myteam.`).

Options a table already has (written by another engine) are never re-checked when it is read.
`SET spark.paimon.<option>` and `/*+ OPTIONS(…) */` (dynamic options) take only the options in the
table below: a key that would have no effect is refused.

## Reference

"""

if __name__ == "__main__":
    print(
        "# Table options\n\nGenerated from `engine/options.py` (`python -m engine.options_doc > "
        "docs/options.md`); "
        "a test keeps it in sync.\n\n" + RULE + options_reference_markdown(),
        end="",
    )
