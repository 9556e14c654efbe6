"""``python -m hlodump`` = the ``hlodump`` command."""

import sys

from .cli import run

run()
