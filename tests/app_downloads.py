"""The downloads an app page offers (captured by the ``served`` fixture of tests/conftest.py)."""

from __future__ import annotations


def download(served: dict, suffix: str) -> bytes:
    """The bytes of the served file whose name ends with ``suffix``."""
    name = next(n for n in served if n and n.endswith(suffix))
    data = served[name]() if callable(served[name]) else served[name]
    return data.encode() if isinstance(data, str) else bytes(data)
