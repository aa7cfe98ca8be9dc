"""Binding: a parsed query's table references → Spark views over the data source (sqlglot rewrite).

``rewrite`` turns a query into Spark SQL over per-statement temporary views, ``scope`` resolves
names in CTE and subquery scopes, ``pruning`` extracts the partition and key filters the data
source can use.
"""
