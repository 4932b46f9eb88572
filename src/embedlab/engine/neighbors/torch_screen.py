"""The torch screen: the float screen's products and filter run with torch on a device (a GPU, or the CPU).

A peer of ``float_screen`` and ``int16_screen``: ``Search(..., device="cuda")``
(the front door) plans the float screen's blocks on one worker, and
``dispatch.search_block`` sends each block of queries here. The products
``Q_blk @ W_blk.T`` and the filter against each query's bar run with torch on
the device; only the survivors (a few per query per block) come back to the
CPU, where they are pooled (``pool``) and rescored in float64 exactly as on
the CPU path (``rescore``, through ``float_screen.FloatScreen``, which
``TorchScreen`` extends). The result is identical, id for id and bit for bit,
to the NumPy screen's. torch is imported only when a device is used.

Why the margin still holds. The filter drops a row only when its screening
score is more than ``2 * eps`` below the k-th best (``precision.margin``),
with ``eps = (D + 8) * 2**-23 * |q| |w|`` (``|q| |w| <= 1`` for cosine's unit
vectors; 2**-23 is float32's machine epsilon, twice its unit roundoff u). That rests on the bound of a
floating-point dot product of length D, ``|fl(q.w) - q.w| <= gamma_D sum|q_i
w_i|``, ``gamma_D = D u / (1 - D u)`` (Higham, Accuracy and Stability of
Numerical Algorithms, 2002, section 3.1, eq. 3.5), which holds for ANY order of
summation, pairwise, blocked or split over threads (split-K), and with fused
multiply-adds (each one rounds once instead of twice). A GPU kernel sums in
its own order; the bound does not care. What would break it is a product in
lower precision: TF32 (10-bit mantissa) on NVIDIA tensor cores. So
``exact_matmul`` turns TF32 off (``torch.backends.cuda.matmul.allow_tf32 =
False``, float32 matmul precision ``"highest"``) for the call and restores
the caller's settings after. The scaled rows (cosine) are rounded to float32
once, as on the CPU.

The CUDA path is exercised by the tests on ``device="cpu"`` (the same code);
a run on a real GPU is to be checked on a machine that has one.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m``
queries in a block, ``v`` rows in a block, ``s`` sampled rows.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ...errors import ChoiceError, MissingExtraError
from .pool import CandidatePool
from .float_screen import FloatScreen

__all__ = ["TorchScreen", "resolve_device", "exact_matmul", "import_torch"]


def resolve_device(device: Any) -> Any:
    """The ``torch.device`` for a name: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``, checked.

    Raises
    ------
    MissingExtraError
        (an ``ImportError``) without torch (the ``torch`` extra).
    ChoiceError
        (a ``ValueError``) for another name, or for a CUDA device torch does
        not see (the message says what torch reports: its version, the CUDA
        it was built for, the GPUs it counts).

    >>> str(resolve_device("cpu"))
    'cpu'
    """
    torch = import_torch()
    expected = "cpu, cuda or cuda:N (a GPU torch sees)"
    if not isinstance(device, str):
        raise ChoiceError(f"device must be a name such as 'cpu' or 'cuda', got {device!r}", parameter="device",
                          value=device, expected=expected)
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ChoiceError(f"unknown device {device!r}: expected {expected}", parameter="device", value=device,
                          expected=expected)
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (dev.index is not None and dev.index >= count):
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            seen = (f"torch {torch.__version__} ({build}) sees {count} GPU(s): "
                    f"torch.cuda.is_available() is {torch.cuda.is_available()}")
            raise ChoiceError(f"device {device!r} is not available: {seen}", parameter="device", value=device,
                              expected=f"cpu, or a GPU torch sees; {seen}")
    return dev


@contextlib.contextmanager
def exact_matmul() -> Iterator[None]:
    """float32 products in float32 for the duration (TF32 off), bfloat16 products summed in float32 (reduced-precision
    reductions off, as ``precision.bf16_margin`` assumes), the caller's settings restored after.

    >>> import torch
    >>> with exact_matmul():
    ...     torch.get_float32_matmul_precision()
    'highest'
    """
    torch = import_torch()
    matmul = torch.backends.cuda.matmul
    tf32, precision = matmul.allow_tf32, torch.get_float32_matmul_precision()
    reduced = matmul.allow_bf16_reduced_precision_reduction
    matmul.allow_tf32 = False
    matmul.allow_bf16_reduced_precision_reduction = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        matmul.allow_tf32 = tf32
        matmul.allow_bf16_reduced_precision_reduction = reduced
        torch.set_float32_matmul_precision(precision)


class TorchScreen(FloatScreen):
    """``FloatScreen`` with its steps 1-2 run by torch on ``device``; rescoring unchanged.

    Takes ``FloatScreen``'s arguments and ``device``, a ``torch.device``
    (``resolve_device``). ``run(plan)`` returns ids (m, K) int64 and scores
    (m, K) float64, the same as ``FloatScreen.run``.
    """

    def __init__(self, *args: Any, device: Any) -> None:
        super().__init__(*args)
        torch = self.torch = import_torch()
        self.device = device
        self.tdtype = torch.float32 if self.dtype == np.float32 else torch.float64
        self.queries_t = torch.tensor(self.queries, device=device)  # (m, D) a copy, in the GEMM's dtype
        self.inv_t = None if self.inv_norms is None else torch.tensor(self.inv_norms.astype(self.dtype),
                                                                      device=device)  # (V,)

    def _first_bar(self) -> np.ndarray:
        """As ``FloatScreen._first_bar``: the k-th best of a strided sample, less 2 eps, shape (m,)."""
        V, k = len(self.W), self.k
        sample = np.unique(np.linspace(0, V - 1, self.plan.sample).astype(np.int64))  # (s,) ascending
        S = self._device_scores(sample)  # (m, s) on the device
        kth = self.torch.kthvalue(S, S.shape[1] - k + 1, dim=1).values  # (m,) the k-th largest
        return kth.cpu().numpy().astype(np.float64) - 2 * self.eps

    def _scan(self, plan: Any) -> CandidatePool:
        """Screen every row on the device; pool the survivors on the CPU."""
        torch, k = self.torch, self.k
        m, V = len(self.queries), len(self.W)
        pool = CandidatePool(m, k)
        bar = self._first_bar()  # (m,)
        for v0 in range(0, V, plan.rows):
            v1 = min(V, v0 + plan.rows)
            S = self._device_scores(np.arange(v0, v1))  # (m, v) on the device
            bar = np.maximum(bar, pool.scores[:, k - 1] - 2 * self.eps)  # the pool's k-th best raises it
            bar_t = self._bar_tensor(bar)  # (m,)
            r, c = torch.nonzero(S >= bar_t[:, None], as_tuple=True)  # survivors, by query then by id
            approx = S[r, c].cpu().numpy()  # (f,) only the survivors leave the device
            r, c = r.cpu().numpy(), c.cpu().numpy() + v0
            for s in range(0, r.size, plan.batch):
                pool.add(r[s:s + plan.batch], c[s:s + plan.batch], approx[s:s + plan.batch], self.eps, self._settle)
        return pool

    def _bar_tensor(self, bar: np.ndarray) -> Any:
        """The bar (m,) float64 as a tensor on the device, rounded to the GEMM's dtype as on the CPU."""
        return self.torch.tensor(bar.astype(self.dtype), device=self.device)

    def _device_scores(self, ids: np.ndarray) -> Any:
        """Screening scores of the queries against rows ``ids`` (s,), ascending -> tensor (m, s) on the device.

        As ``FloatScreen._scores``: rows scaled to unit length for cosine (the
        float32 product of the row and its float32 inverse length), and the
        query's own id scored -inf.
        """
        torch = self.torch
        run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == ids.size else ids
        rows = torch.tensor(self.W[run], device=self.device).to(self.tdtype)  # (s, D) a copy on the device
        if self.inv_t is not None:
            rows = rows * self.inv_t[torch.as_tensor(ids, device=self.device), None]  # unit rows; zero rows stay 0
        S = self.queries_t @ rows.T  # (m, s)
        return self._exclude_own(S, ids)

    def _exclude_own(self, S: Any, ids: np.ndarray) -> Any:
        """S (m, s) on the device with each query's own id, where it is among ``ids`` (s,), ascending, set to -inf."""
        if self.exclude is not None:
            torch = self.torch
            at = np.minimum(np.searchsorted(ids, self.exclude), ids.size - 1)  # (m,)
            own = np.flatnonzero(ids[at] == self.exclude)
            if own.size:
                S[torch.as_tensor(own, device=self.device), torch.as_tensor(at[own], device=self.device)] = -np.inf
        return S


def import_torch(what: str = "screens on a torch device (--device)") -> Any:
    """The torch module; ``MissingExtraError`` (an ``ImportError``) naming the ``torch`` extra and ``what`` needs it."""
    try:
        import torch
    except ImportError:
        raise MissingExtraError.for_module("torch", what, ("torch",)) from None
    return torch
