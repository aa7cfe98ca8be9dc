"""The Spark data source: how Spark reads and writes dyntable tables (batch and streaming).

``datasource`` is the batch reader/writer and the ``dyntable`` format, ``stream`` the streaming
reader/writer, ``spark_types`` the Arrow↔Spark type mapping and Arrow batch hand-off.
"""
