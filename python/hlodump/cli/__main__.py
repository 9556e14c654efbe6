"""``python -m hlodump.cli`` = ``hlodump``."""

import sys

from . import main

sys.exit(main())
