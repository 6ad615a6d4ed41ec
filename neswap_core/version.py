"""The version of neswap (recorded in every report)."""

__version__ = "0.1.0"
