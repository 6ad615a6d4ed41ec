"""Exceptions of neswap: each message says what is wrong and what to do about it.

The app shows these with ``st.error``; anything else reaching the user is a bug.
"""

from __future__ import annotations


class NeswapError(Exception):
    """Base class of every error neswap raises on purpose."""


class CorpusError(NeswapError):
    """The input corpus cannot be used as given (empty, undecodable, duplicate ids, too small)."""


class ModelMissingError(NeswapError):
    """An offline model package is not installed; the message names the package to install."""


class ConfigError(NeswapError):
    """A run configuration is invalid (unknown category, bad role, value out of range)."""


class FitError(NeswapError):
    """A statistical fit cannot be run on this input (bad embeddings, too few points)."""


class NoValidPairsError(NeswapError):
    """No pair of chunks satisfies the swap constraints for the chosen categories."""


class LeakError(NeswapError):
    """The leak scan found identifiers in the released text that the analyst has not accepted."""


class AttackError(NeswapError):
    """An attacker cannot answer (e.g. the LLM endpoint is unreachable or keeps refusing)."""


class WorkspaceError(NeswapError):
    """The workspace file cannot be used (damaged, other format, busy) or was given bad input."""
