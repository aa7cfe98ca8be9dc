"""Statement planners, one module per kind of statement, and the runner that carries out their plans.

Importing the package loads nothing: the planners (pure, see ``sqlext.execute.planning``) import
without Spark, and the session looks statements up in ``sqlext.execute.handlers``.
"""
