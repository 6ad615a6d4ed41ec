"""A fitted mixture read back from the workspace as its attributes, the estimator made on demand.

The Clusters and Swaps pages read the fitted mixture's attributes (weights, concentrations,
means, convergence) and hand it to the sweep, whose kept state needs none of its methods; its
class derives from scikit-learn's ``BaseEstimator``, so unpickling it imported scikit-learn: 0.6
s of each of those pages' first draw after a restart, at any corpus size (issue 21). The
workspace keeps the attributes as well (plain numbers and arrays: ``mixture_state``), and a
``StoredMixture`` holds them; a method call (``predict``, ``predict_proba``, ...) makes the
estimator from them once. Pickled, it is that estimator, byte for byte (the memo keys of
``choose/memo_keys.py`` pickle the mixture: the app and the CLI must agree).
"""

from __future__ import annotations

import pickle
from typing import Any


def mixture_state(fitted: Any) -> bytes:
    """The attributes of a fitted ``SphericalMixture`` (parameters and fitted values), pickled."""
    return pickle.dumps(dict(vars(fitted)), protocol=pickle.HIGHEST_PROTOCOL)


class StoredMixture:
    """A fitted ``SphericalMixture`` as its attributes; the estimator itself on first method use."""

    def __init__(self, state: bytes) -> None:
        vars(self).update(pickle.loads(state))
        self._estimator_: Any = None

    def estimator(self) -> Any:
        """The ``SphericalMixture`` these attributes describe (scikit-learn imported here)."""
        if self._estimator_ is None:
            from neswap_core.models.mixture import SphericalMixture

            model = SphericalMixture.__new__(SphericalMixture)
            vars(model).update({k: v for k, v in vars(self).items() if k != "_estimator_"})
            self._estimator_ = model
        return self._estimator_

    def __getattr__(self, name: str) -> Any:  # only for what the attributes do not hold: methods
        if name.startswith("__") or name == "_estimator_":
            raise AttributeError(name)
        return getattr(self.estimator(), name)

    def __reduce_ex__(self, protocol):  # type: ignore[override]
        return self.estimator().__reduce_ex__(protocol)

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105 - pickle and isinstance see the estimator's class
        return type(self.estimator())

    def __repr__(self) -> str:
        return f"StoredMixture(family={getattr(self, 'family', '?')!r}, n_components_={getattr(self, 'n_components_', '?')})"
