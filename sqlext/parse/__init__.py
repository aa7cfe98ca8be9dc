"""Parsing: SQL text → statements → typed statement trees (no Spark, no tables).

``splitter`` cuts a script into statements and classifies them; ``parser`` runs the Lark grammar
(``grammar/dyntable.lark``) over dyntable's own statements; ``tree``/``tree_base``/``tree_ddl`` build
the typed AST of ``ast``; ``names`` holds the name and literal types every layer shares.
"""
