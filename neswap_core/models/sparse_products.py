"""Sparse features whose products with dense matrices run on MKL's sparse kernels (issue 21).

The library's logistic regression (``models/logistic.py``) spends most of its time in the two
products of newton-cg's conjugate gradients, X·V and Gᵀ·X (features X: passages × terms,
sparse; V, G: dense, one column per company). scipy computes them with a plain loop over the
non-zeros; Intel's MKL, which the PyTorch wheel the library already depends on carries, does
the same sums with vectorised kernels in about half the time on one thread (char_wb 2–5-grams
of a 100k line-up of 50 companies, columns most used first: the 100 products of one fit 3.7 →
1.8 s, the fit 4.4 → 2.5 s). Gᵀ·X is computed as (Xᵀ·G)ᵀ from Xᵀ kept as CSR, so both are
row-major kernels; the index arrays are scipy's int32 ones, shared (torch copied int64 indices
to MKL's int32 on every product: 2.5 s for those 100).

``MklProducts`` is a ``scipy.sparse.csr_matrix`` (scikit-learn validates and keeps it as it
is) that hands float32 products with float32 dense operands to MKL on one thread and every
other operation to scipy. Each sum is over the same terms; MKL adds them in its own order, so
the results differ from scipy's in the last float32 digits (as two BLAS builds do) and a
solve's coefficients within its stopping rule (``tests/test_logistic.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse

from .blas_threads import torch_one_thread


class MklProducts(sparse.csr_matrix):
    """A float32 CSR matrix whose ``self @ dense`` and ``dense @ self`` (float32, 2-D) run
    on MKL's sparse kernels through torch, one thread; scipy for everything else."""

    def _mkl(self):
        kept = self.__dict__.get("_mkl_tensors")
        if kept is None:
            import torch

            def tensor(m: sparse.csr_matrix):
                # scipy's own index arrays, shared: int32 is MKL's index type (int64 indices
                # were copied to it on every product, about three times slower)
                index = np.int32 if m.indices.dtype == np.int32 == m.indptr.dtype else np.int64
                return torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(index, copy=False)),
                                               torch.from_numpy(m.indices.astype(index, copy=False)),
                                               torch.from_numpy(m.data), size=m.shape,
                                               check_invariants=False)  # scipy's CSR: valid  # fmt: skip

            plain = sparse.csr_matrix(self)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
                kept = self._mkl_tensors = (tensor(plain), tensor(plain.T.tocsr()))
        return kept

    def _matmul_multivector(self, other):
        if not _float32_dense(self, other):
            return super()._matmul_multivector(other)
        return _mm(self._mkl()[0], other)

    def _rmatmul_dispatch(self, other):
        if isinstance(other, np.ndarray) and other.ndim == 2 and _float32_dense(self, other.T):
            return _mm(self._mkl()[1], other.T).T  # (Xᵀ · otherᵀ)ᵀ
        return super()._rmatmul_dispatch(other)


def _float32_dense(matrix, other) -> bool:
    return (matrix.dtype == np.float32 and isinstance(other, np.ndarray) and other.ndim == 2
            and other.dtype == np.float32)  # fmt: skip


def _mm(tensor, dense: np.ndarray) -> np.ndarray:
    import torch

    with torch_one_thread():  # one thread, as every fit's BLAS: the same bits anywhere
        return torch.mm(tensor, torch.from_numpy(np.ascontiguousarray(dense))).numpy()
