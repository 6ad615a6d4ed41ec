"""A fit stand-in for spawned workers that imports nothing at module level (tests/test_blas_threads.py)."""


def blas_threads_seen() -> list[int]:
    """The thread count of every BLAS library loaded, SciPy's loaded here: as a fit whose
    modules import SciPy where they use it."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
