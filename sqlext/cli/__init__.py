"""The ``dyntable-sql`` command-line runner: argument handling (``main``) and the REPL (``repl``)."""
