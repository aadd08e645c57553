"""labcoat's version, importable from any layer without importing the package's facade."""

__version__ = "0.1.0"
