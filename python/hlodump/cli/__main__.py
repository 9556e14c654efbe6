"""``python -m hlodump.cli`` = ``hlodump``."""

import sys

from . import run

run()
