"""Fitted models: sentence embeddings, spherical mixtures, the Pitman estimator (SPEC §4-§5)."""
