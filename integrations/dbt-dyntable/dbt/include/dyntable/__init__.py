"""dbt's include path of the dyntable adapter: its dbt project (macros and profile template)."""

import os

PACKAGE_PATH = os.path.dirname(__file__)
