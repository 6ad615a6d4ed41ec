"""The hyperparameter grid (SPEC §8): one row per (N, f, K, ε), fits flagged, a winner per setting."""

import numpy as np

from neswap_core.choose.frontier import frontier_winner
from neswap_core.choose.grid import hyperparameter_grid
from tests.test_releases import embed, make_chunks


def test_grid_rows_winners_and_convergence_flags():
    chunks = make_chunks(seed=5)
    x = embed([c.text for c in chunks])
    table, sweeps = hyperparameter_grid(
        chunks, x, embed, ["Organization", "Person", "Product"],
        families=("pkb", "scauchy"), n_components=(2,), min_weights=(1e-3, 1e-10),
        populations=(1e10, 1e30), n_init=1, max_swaps=4,
    )
    assert len(table) == 2 * 1 * 2 * 2 and len(sweeps) == 4
    assert set(table["family"]) == {"pkb", "scauchy"} and table["converged"].dtype == bool
    for _, row in table.iterrows():
        sweep = next(s for k, s in sweeps.items()
                     if (k.family, k.n_components, k.min_weight) == (row["family"], row["K"], row["min_weight"]))
        winner, counts = frontier_winner(sweep.table(row["N"]))
        assert row["frontier_winner"] == winner and row["frontier_counts"] == counts
        assert winner == "" or counts[winner] == max(counts.values())
    # N changes only risk: the same setting's utilities agree across N
    pkb = [s for k, s in sweeps.items() if k.family == "pkb"][0]
    np.testing.assert_allclose(pkb.table(1e10)["du"], pkb.table(1e30)["du"])
