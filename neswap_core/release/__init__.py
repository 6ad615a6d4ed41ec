"""Candidate releases -> choice: operators, pairs, swapping, risk, utility, frontier, export (SPEC §3, §5-§7, §11)."""
