"""The Normalized Difference layer as a PyTorch module.

For a band pair ``(i, j)`` with learnable parameters ``a`` and ``c`` and band
weights ``wa = softplus(a)``, ``wc = softplus(c)``, the layer computes

.. math::

    N_{ij} = \\frac{w_a b_i - w_c b_j}{w_a b_i + w_c b_j + \\epsilon}

(``variant="reflectance"``, for non-negative inputs). Two variants accept
signed inputs (Remark 2.3 of the paper): ``"signed"`` replaces ``b`` in the
denominator by the smooth absolute value ``sqrt(b**2 + eps)``; ``"softplus"``
applies ``softplus`` to the inputs first. With ``a = c = 0`` the layer is the
classic normalized difference (up to the common factor ``log 2``, which
cancels).

This module is the torch-facing part of sknd; the estimators in
:mod:`sknd` wrap it and never expose torch objects.
"""

import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MATMUL_MAX_INPUTS",
    "METHODS",
    "VARIANTS",
    "NormalizedDifference",
    "all_pairs",
    "normalized_difference",
    "resolve_pairs",
]

#: The supported formulations, see the module docstring.
VARIANTS = ("reflectance", "signed", "softplus")


def all_pairs(n_features):
    """Return every band pair ``(i, j)`` with ``i < j``.

    Parameters
    ----------
    n_features : int
        Number of input bands.

    Returns
    -------
    pairs : ndarray of shape (n_features * (n_features - 1) // 2, 2)
        Integer pairs in :func:`itertools.combinations` order.

    Examples
    --------
    >>> all_pairs(3).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    pairs = np.array(list(itertools.combinations(range(n_features), 2)), dtype=np.int64)
    return pairs.reshape(-1, 2)


def resolve_pairs(n_features, pairs="all"):
    """Validate band pairs and return them as an integer array.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs : "all" or array-like of shape (n_pairs, 2)
        ``"all"`` for :func:`all_pairs`, or explicit ``(i, j)`` band indices
        with ``i != j``, each unordered pair at most once.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2)

    Raises
    ------
    ValueError
        If a pair is malformed, repeats a band, is out of range or duplicated.

    Examples
    --------
    >>> resolve_pairs(4, [(3, 1), (0, 2)]).tolist()
    [[3, 1], [0, 2]]
    """
    if isinstance(pairs, str):
        if pairs != "all":
            raise ValueError(f"pairs must be 'all' or a list of (i, j) band pairs, got {pairs!r}.")
        return all_pairs(n_features)
    try:
        array = np.asarray(pairs)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"pairs must be a list of (i, j) band pairs, got {pairs!r}.") from exc
    if array.ndim != 2 or array.shape[1] != 2 or len(array) == 0:
        raise ValueError(f"pairs must be a non-empty list of (i, j) band pairs, got {pairs!r}.")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"pairs must hold integer band indices, got {pairs!r}.")
    array = array.astype(np.int64)
    if array.min() < 0 or array.max() >= n_features:
        raise ValueError(
            f"pairs refer to band indices outside [0, {n_features - 1}] for {n_features} bands."
        )
    if np.any(array[:, 0] == array[:, 1]):
        raise ValueError("pairs must combine two different bands; found a pair (i, i).")
    if len(np.unique(np.sort(array, axis=1), axis=0)) < len(array):
        raise ValueError("pairs must not list the same band pair twice.")
    return array


#: Methods of :func:`normalized_difference`, see there.
METHODS = ("auto", "gather", "matmul")

#: ``method="auto"`` computes the layer as matrix products up to this many layer inputs
#: (bands, or twice the bands for ``variant="signed"``) and by gathering band columns above.
#: The products cost ``O(n_inputs)`` operations per output against ``O(1)`` for gathering,
#: but run as GEMMs instead of several memory-bound passes: with benchmarks/bench_layer.py
#: (forward+backward, 1 thread) matmul took 0.3-0.5x the time of gather from 8 to 48 bands
#: at batch 4096 and about the same up to 32 bands at batch 32 (1.4x at 48).
MATMUL_MAX_INPUTS = 32


class _PairPlan:
    """Index tensors laying out the band pairs for both formulations.

    Built once per pair list, device and dtype (the layer caches it). With
    ``P`` pairs and layer inputs ``u`` (the bands ``b``; for ``"signed"`` also
    ``r = sqrt(b**2 + epsilon)``, appended as columns ``n..2n-1``):

    - gather: ``u[:, gather_index]`` gives the columns ``[b_i | b_j]`` (and
      ``[r_i | r_j]``); multiplied by ``[wa | wc]`` (repeated) and offset by
      ``half_epsilon`` they sum to the numerator and the denominator.
    - matmul: two ``(n_inputs, P)`` matrices stacked as ``W`` of shape
      ``(2, n_inputs, P)``: column ``p`` of ``W[0]`` holds ``wa`` at row ``i``
      and ``-wc`` at row ``j``, column ``p`` of ``W[1]`` holds ``wa`` and ``wc``
      at the rows of ``r_i`` and ``r_j``, so that ``A = u @ W[0]`` and
      ``D = u @ W[1] + epsilon``.
    """

    def __init__(self, pairs, n_features, variant, epsilon, dtype, device):
        pairs = torch.as_tensor(pairs, device=device).to(torch.int64)
        i, j = pairs[:, 0], pairs[:, 1]
        n_pairs = len(pairs)
        signed = variant == "signed"
        self.n_pairs = n_pairs
        self.n_features = n_features
        self.n_inputs = 2 * n_features if signed else n_features
        self.variant = variant
        self.epsilon = epsilon
        self.signed = signed
        self.pairs = pairs
        self.dtype = dtype
        self.epsilon_row = torch.full((n_pairs,), epsilon, dtype=dtype, device=device)
        ri, rj = (i + n_features, j + n_features) if signed else (i, j)
        ones = torch.ones(n_pairs, dtype=dtype, device=device)
        if signed:
            self.gather_index = torch.cat([i, j, ri, rj])
            self.half_epsilon = torch.cat([0 * ones, 0 * ones, ones, ones]) * (epsilon / 2)
            # Signs of the four gathered blocks in dL/d[wa | wc] (see _gather_backward).
            self.gather_sign = torch.cat([ones, -ones, -ones, -ones])
        else:
            self.gather_index = torch.cat([i, j])
            self.half_epsilon = torch.cat([ones, ones]) * (epsilon / 2)
            self.gather_sign = torch.cat([ones, -ones])
        # Tensor.split goes through Python; split_with_sizes is one call (per-step overhead).
        self.gather_sizes = [n_pairs] * (4 if signed else 2)
        self._selection = None  # matmul layout, built on first use (see matmul_selection)

    def matmul_selection(self):
        """Dense ``(2, 2, n_inputs, P)`` selection tensors of the matmul form, built once.

        ``S[0]`` places ``wa`` and ``S[1]`` places ``wc`` in ``W`` (with the
        numerator's minus sign): ``W = S[0] * wa + S[1] * wc``. The same
        tensors, with the denominator block negated (``G[k] = S[k] * [1, -1]``),
        collect ``dL/dwa`` and ``dL/dwc`` from ``M = u.T @ [G/D, G N/D]``.
        Only built for few inputs, where ``4 n_inputs P`` numbers are small.
        """
        if self._selection is None:
            i, j = self.pairs[:, 0], self.pairs[:, 1]
            n = self.n_features if self.signed else 0
            p = self.n_pairs
            arange = torch.arange(p, device=i.device)
            place = torch.zeros(2, 2, self.n_inputs, p, dtype=self.dtype, device=i.device)
            place[0, 0, i, arange] = 1
            place[0, 1, i + n, arange] = 1
            place[1, 0, j, arange] = -1
            place[1, 1, j + n, arange] = 1
            collect = place.clone()
            collect[:, 1].neg_()
            self._selection = (place, collect)
        return self._selection

    def choose(self, method):
        if method == "auto":
            return "matmul" if self.n_inputs <= MATMUL_MAX_INPUTS else "gather"
        return method

    def gather_weights(self, w2):
        """``[wa | wc]`` laid out like the gathered columns."""
        return w2.repeat(2) if self.signed else w2


def _smooth_abs(x, epsilon):
    """``sqrt(x**2 + epsilon)`` without overflowing ``x**2`` (float32 overflows above 1.8e19)."""
    return torch.hypot(x, x.new_tensor(math.sqrt(epsilon)))


def _layer_input(x, variant, epsilon):
    """The columns the pairs are formed from: ``b``, ``softplus(b)`` or ``[b | r]``."""
    if variant == "softplus":
        return F.softplus(x)
    if variant == "signed":
        return torch.cat([x, _smooth_abs(x, epsilon)], 1)
    return x


def _input_grad(grad_u, x, variant, epsilon):
    """Chain ``dL/du`` (layer input columns) back to ``dL/dx``."""
    if variant == "softplus":
        return grad_u.mul_(torch.sigmoid(x))
    if variant == "signed":
        n = x.shape[1]
        # r = sqrt(x^2 + eps): dr/dx = x / r.
        return grad_u[:, :n] + grad_u[:, n:] * x / _smooth_abs(x, epsilon)
    return grad_u


def _gather_forward(u, wk, plan, keep_gathered):
    """Return ``N, D, gathered`` (``gathered`` is None unless ``keep_gathered``).

    ``wk`` is :meth:`_PairPlan.gather_weights` of ``softplus([a | c])``. The
    numerator and denominator come from one weighted copy of the gathered
    columns: ``t = gathered * wk + half_epsilon`` holds ``wa b_i + eps/2`` and
    ``wc b_j + eps/2`` side by side, whose difference is ``A`` and whose sum is
    ``D`` (for "signed", ``D`` sums the ``r`` half instead).
    """
    gathered = u.index_select(1, plan.gather_index)
    if keep_gathered:
        t = torch.addcmul(plan.half_epsilon, gathered, wk)
    else:
        t = gathered.mul_(wk).add_(plan.half_epsilon)
        gathered = None
    parts = t.split_with_sizes(plan.gather_sizes, 1)
    numerator = parts[0] - parts[1]
    denominator = parts[2] + parts[3] if plan.signed else parts[0] + parts[1]
    return numerator.div_(denominator), denominator, gathered


def _gather_backward(grad, out, denominator, gathered, wk, plan, need_input, h=None):
    """Closed-form gradients from the gathered columns.

    With ``G = dL/dN`` (``grad``, not modified) and ``Gd = G / D``,
    Proposition 2.1 gives for "reflectance" and "softplus"

        dL/dwa =  sum_b (Gd - Gd N) b_i,    dL/db_i =  wa (Gd - Gd N),
        dL/dwc = -sum_b (Gd + Gd N) b_j,    dL/db_j = -wc (Gd + Gd N),

    and for "signed" (``D = wa r_i + wc r_j + eps``)

        dL/dwa = sum_b (Gd b_i - Gd N r_i),   dL/dwc = -sum_b (Gd b_j + Gd N r_j),

    the input terms being the same products with ``b`` or ``r`` replaced by
    ``wa`` or ``wc``. The signs are applied to the ``(2P,)`` or ``(4P,)``
    vectors (``plan.gather_sign``), not to ``n_samples x n_pairs`` arrays.

    ``out`` and ``denominator`` are overwritten (they hold ``Gd N`` and ``Gd``
    on return); ``h`` is an optional ``(n_samples, 2P or 4P)`` buffer.
    Returns ``dL/d[wa | wc]`` of shape (2P,) and ``dL/du`` (or None).
    """
    p = plan.n_pairs
    gd = torch.div(grad, denominator, out=denominator)
    gdn = out.mul_(gd)
    if h is None:
        h = torch.empty(len(gd), len(plan.gather_index), dtype=gd.dtype, device=gd.device)
    if plan.signed:
        hv = h.view(len(gd), 2, 2, p)
        hv[:, 0] = gd.unsqueeze(1)
        hv[:, 1] = gdn.unsqueeze(1)
    else:
        h1, h2 = h.split_with_sizes(plan.gather_sizes, 1)
        torch.sub(gd, gdn, out=h1)
        torch.add(gd, gdn, out=h2)
    grad_u = None
    if need_input:
        grad_u = torch.zeros(len(h), plan.n_inputs, dtype=h.dtype, device=h.device)
        grad_u.index_add_(1, plan.gather_index, h * (wk * plan.gather_sign))
    grad_wk = h.mul_(gathered).sum(0).mul_(plan.gather_sign)
    grad_w2 = grad_wk[: 2 * p] + grad_wk[2 * p :] if plan.signed else grad_wk
    return grad_w2, grad_u


def _matmul_weight(wa, wc, plan):
    """The ``(2, n_inputs, P)`` matrices ``[W_A, W_D]`` of :class:`_PairPlan`."""
    place = plan.matmul_selection()[0]
    return torch.mul(place[0], wa).addcmul_(place[1], wc)


def _matmul_forward(u, weight, plan):
    """Return ``N, D`` from two GEMMs: ``A = u @ W[0]``, ``D = u @ W[1] + epsilon``.

    Two ``(n_samples, P)`` products rather than one ``(n_samples, 2P)``: ``A``
    and ``D`` come out contiguous and ``N`` overwrites ``A`` in place.
    """
    numerator = torch.mm(u, weight[0])
    denominator = torch.addmm(plan.epsilon_row, u, weight[1])
    return numerator.div_(denominator), denominator


def _matmul_backward(grad, out, denominator, u, weight, plan, need_input):
    """Closed-form gradients as GEMMs (same equations as :func:`_gather_backward`).

    ``dL/dA = G / D`` and ``dL/dD = -G N / D``: the weight matrices get
    ``u.T @ (G / D)`` and ``-u.T @ (G N / D)``, each ``wa``/``wc`` collecting its
    two entries, and the input ``(G / D) @ W[0].T - (G N / D) @ W[1].T``. One
    ``n_samples x P`` temporary holds ``G / D``, then ``G N / D``; ``grad`` is
    not modified.
    """
    h = grad / denominator
    m = torch.empty(2, plan.n_inputs, plan.n_pairs, dtype=out.dtype, device=out.device)
    ut = u.t()
    torch.mm(ut, h, out=m[0])
    grad_u = torch.mm(h, weight[0].t()) if need_input else None
    h.mul_(out)
    torch.mm(ut, h, out=m[1])
    if need_input:
        grad_u.addmm_(h, weight[1].t(), alpha=-1)
    grad_w2 = (plan.matmul_selection()[1] * m).sum((1, 2)).view(-1)
    return grad_w2, grad_u


class _NormalizedDifferenceFunction(torch.autograd.Function):
    """ND outputs of all pairs with the closed-form backward pass.

    "gather" keeps only the input and the parameters for the backward pass (the
    pair layout is a constant of the layer) and recomputes the per-pair
    intermediates there, so the memory held between forward and backward does
    not grow with the number of pairs. "matmul", used for few bands, also keeps
    the output, the denominator and the ``(2, n_inputs, P)`` weights: at that
    size recomputing them would cost as much as the rest of the backward pass.
    """

    @staticmethod
    def forward(ctx, x, a, c, plan, method):
        ctx.plan = plan
        ctx.method = method
        u = _layer_input(x, plan.variant, plan.epsilon)
        if method == "matmul":
            weight = _matmul_weight(F.softplus(a), F.softplus(c), plan)
            out, denominator = _matmul_forward(u, weight, plan)
            ctx.save_for_backward(x, a, c, out, denominator, weight)
            return out
        ctx.save_for_backward(x, a, c)
        w2 = F.softplus(torch.cat([a, c]))
        return _gather_forward(u, plan.gather_weights(w2), plan, keep_gathered=False)[0]

    @staticmethod
    def backward(ctx, grad_out):
        x, a, c, *kept = ctx.saved_tensors
        plan = ctx.plan
        need_input = ctx.needs_input_grad[0]
        u = _layer_input(x, plan.variant, plan.epsilon)
        ac = torch.cat([a, c])
        if ctx.method == "matmul":
            out, denominator, weight = kept
            grad_w2, grad_u = _matmul_backward(
                grad_out, out, denominator, u, weight, plan, need_input
            )
        else:
            wk = plan.gather_weights(F.softplus(ac))
            out, denominator, gathered = _gather_forward(u, wk, plan, keep_gathered=True)
            grad_w2, grad_u = _gather_backward(
                grad_out, out, denominator, gathered, wk, plan, need_input
            )
        # d softplus(a) / da = sigmoid(a).
        grad_a, grad_c = grad_w2.mul_(torch.sigmoid(ac)).split(plan.n_pairs)
        grad_x = _input_grad(grad_u, x, plan.variant, plan.epsilon) if need_input else None
        return grad_x, grad_a, grad_c, None, None


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


def normalized_difference(x, a, c, pairs, epsilon=1e-6, variant="reflectance", method="auto"):
    """Learnable normalized differences of band pairs (functional form).

    Parameters
    ----------
    x : torch.Tensor of shape (n_samples, n_features)
        Input bands.
    a, c : torch.Tensor of shape (n_pairs,)
        Raw parameters; the band weights are ``softplus(a)`` and ``softplus(c)``.
    pairs : torch.Tensor of shape (n_pairs, 2)
        Integer band indices ``(i, j)`` of each pair.
    epsilon : float, default=1e-6
        Stabilising constant of the denominator (and of the smooth absolute
        value in the ``"signed"`` variant).
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        Formulation, see the module docstring.
    method : {"auto", "gather", "matmul"}, default="auto"
        How the outputs are computed; all give the same values up to rounding
        and exact closed-form gradients. ``"gather"`` takes the two band
        columns of every pair (memory traffic ``O(n_pairs)`` per sample);
        ``"matmul"`` computes all numerators and denominators as one matrix
        product with a sparse-in-dense ``(n_features, 2 n_pairs)`` weight
        matrix (``O(n_features n_pairs)`` flops per sample, but one fast
        GEMM). ``"auto"`` uses ``"matmul"`` up to :data:`MATMUL_MAX_INPUTS`
        layer inputs.

    Returns
    -------
    torch.Tensor of shape (n_samples, n_pairs)
        Values in ``[-1, 1]``.

    Examples
    --------
    >>> x = torch.tensor([[0.5, 0.1]])
    >>> pairs = torch.tensor([[0, 1]])
    >>> zero = torch.zeros(1)
    >>> round(normalized_difference(x, zero, zero, pairs, epsilon=0.0).item(), 4)
    0.6667
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")
    _check_method(method)
    plan = _PairPlan(pairs, x.shape[1], variant, float(epsilon), x.dtype, x.device)
    return _NormalizedDifferenceFunction.apply(x, a, c, plan, plan.choose(method))


class NormalizedDifference(nn.Module):
    """Normalized Difference layer with learnable band weights.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs : "all" or array-like of shape (n_pairs, 2), default="all"
        Band pairs to compute. ``"all"`` uses every pair ``i < j`` in
        :func:`itertools.combinations` order.
    epsilon : float, default=1e-6
        Stabilising constant, must be positive.
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        ``"reflectance"`` expects non-negative inputs (bands of a spectrum);
        ``"signed"`` and ``"softplus"`` accept any real input.
    method : {"auto", "gather", "matmul"}, default="auto"
        How the outputs are computed, see :func:`normalized_difference`.

    Attributes
    ----------
    a, c : torch.nn.Parameter of shape (n_pairs,)
        Raw parameters, initialised at 0 so that the untrained layer is the
        classic normalized difference.
    pairs : torch.Tensor of shape (n_pairs, 2)
        The band pairs (a buffer, saved with the state dict).

    Examples
    --------
    >>> layer = NormalizedDifference(4)
    >>> layer(torch.rand(8, 4)).shape
    torch.Size([8, 6])
    """

    def __init__(self, n_features, pairs="all", epsilon=1e-6, variant="reflectance", method="auto"):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")
        if not epsilon > 0:
            raise ValueError(f"epsilon must be positive, got {epsilon!r}.")
        _check_method(method)
        pairs = torch.as_tensor(resolve_pairs(n_features, pairs))
        self.n_features = n_features
        self.epsilon = float(epsilon)
        self.variant = variant
        self.method = method
        self.register_buffer("pairs", pairs)
        self.a = nn.Parameter(torch.zeros(len(pairs)))
        self.c = nn.Parameter(torch.zeros(len(pairs)))
        self._plans = {}

    @property
    def n_pairs(self):
        """Number of band pairs, i.e. of outputs."""
        return self.pairs.shape[0]

    def _plan(self, dtype, device):
        """The pair layout for this dtype and device, rebuilt if ``pairs`` changed."""
        key = (dtype, device, self.pairs.data_ptr(), self.pairs._version)
        plan = self._plans.get(key)
        if plan is None:
            plan = _PairPlan(self.pairs, self.n_features, self.variant, self.epsilon, dtype, device)
            self._plans = {key: plan}
        return plan

    def forward(self, x):
        plan = self._plan(x.dtype, x.device)
        return _NormalizedDifferenceFunction.apply(
            x, self.a, self.c, plan, plan.choose(self.method)
        )

    def __getstate__(self):
        # The plans are caches of index tensors: rebuilt on first use, never pickled.
        state = super().__getstate__()
        state["_plans"] = {}
        return state

    def __setstate__(self, state):
        state.setdefault("_plans", {})
        state.setdefault("method", "auto")
        super().__setstate__(state)

    def extra_repr(self):
        return (
            f"n_features={self.n_features}, n_pairs={self.n_pairs}, "
            f"epsilon={self.epsilon:g}, variant={self.variant!r}"
        )
