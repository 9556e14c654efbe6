"""The package's version (``hlodump.__version__``; pyproject.toml's ``version``)."""

__version__ = "0.1.0"
