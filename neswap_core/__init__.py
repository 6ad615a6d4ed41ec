"""neswap: anonymise a corpus by named entity swapping (see SPEC.md in the project's docs)."""

__version__ = "0.1.0"
