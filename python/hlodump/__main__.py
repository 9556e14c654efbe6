"""``python -m hlodump`` = the ``hlodump`` command."""

import sys

from .cli import main

sys.exit(main())
