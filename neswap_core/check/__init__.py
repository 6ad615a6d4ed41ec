"""Measured protection of a release: the re-identification attack and the divergence audit (SPEC §8, §9)."""
