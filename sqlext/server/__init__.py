"""``dyntable-server``: dyntable's SQL for BI tools over the HiveServer2 Thrift protocol.

Modules: ``main`` (the command line), ``thrift_service`` (TCLIService calls and the socket
server), ``sessions`` (client sessions and operations on one SparkSession), ``results`` (Arrow →
columnar ``TRowSet``, paging), ``metadata`` (JDBC metadata results), ``auth`` (users file,
SASL PLAIN server side).
"""
