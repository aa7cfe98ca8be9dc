"""``python -m sqlext.cli`` runs ``dyntable-sql``."""

import sys

from sqlext.cli.main import main

sys.exit(main())
