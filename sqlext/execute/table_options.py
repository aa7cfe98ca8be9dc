"""The table options dyntable keeps for itself: computed columns and watermarks, stored as
``dyntable.computed-column.<name>`` / ``dyntable.watermark.<column>`` so that any Paimon reader
keeps them, and hidden again where options are shown."""

from __future__ import annotations

from collections.abc import Mapping

COMPUTED_PREFIX = "dyntable.computed-column."
WATERMARK_PREFIX = "dyntable.watermark."
INTERNAL_OPTION_PREFIXES = (COMPUTED_PREFIX, WATERMARK_PREFIX)
# The property that is the table's comment, not an option (Spark's reserved key; Paimon's schema comment).
COMMENT_PROPERTY = "comment"


def computed_columns(options: Mapping[str, str]) -> dict[str, str]:
    """Each computed column's expression, by column name."""
    return {k[len(COMPUTED_PREFIX):]: v for k, v in options.items() if k.startswith(COMPUTED_PREFIX)}


def watermarks(options: Mapping[str, str]) -> dict[str, str]:
    """Each watermark's expression, by the column it is declared on."""
    return {k[len(WATERMARK_PREFIX):]: v for k, v in options.items() if k.startswith(WATERMARK_PREFIX)}
