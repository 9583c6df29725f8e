"""The ND layer's math in torch: forward and closed-form backward, three formulations.

The equations are those of :mod:`sknd._nd._formula` (the numpy reference) and of
Proposition 2.1 of the paper for the gradients. Three formulations compute them
(:meth:`PairPlan.choose` picks one; see
:data:`sknd._nd._formula.TORCH_MATMUL_MAX_INPUTS` for the first two): gathering the
two band columns of every pair, two matrix products with sparse-in-dense
weights, and, for images and series, runs of pairs reading their bands as
slices of the input. The autograd function of :mod:`sknd._nd._autograd` and the fused
training step of :mod:`sknd._training._fused` call these functions; neither writes the
formula again.

Every function takes the layer input as a table ``(n_rows, n_columns)`` or, for
images and series with the bands on an inner axis, ``(n_rows, n_columns,
n_positions)`` (see :func:`band_table`): the pairs are formed along axis 1 and
the gradients of the weights sum over the other axes, so an ``(N, C, H, W)``
patch is computed in place of its pixels without transposing it.
"""

import math

import torch
import torch.nn.functional as F

from ._formula import TORCH_MATMUL_MAX_INPUTS

__all__ = []


class PairPlan:
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
            # Signs of the four gathered blocks in dL/d[wa | wc] (see gather_backward).
            self.gather_sign = torch.cat([ones, -ones, -ones, -ones])
        else:
            self.gather_index = torch.cat([i, j])
            self.half_epsilon = torch.cat([ones, ones]) * (epsilon / 2)
            self.gather_sign = torch.cat([ones, -ones])
        # Tensor.split goes through Python; split_with_sizes is one call (per-step overhead).
        self.gather_sizes = [n_pairs] * (4 if signed else 2)
        self._selection = None  # matmul layout, built on first use (see matmul_selection)
        self._runs = None  # slices layout, built on first use (see runs)

    def matmul_selection(self):
        """The matmul form's layout, built once: ``(place, collect_index, collect_sign)``.

        ``place`` holds dense ``(2, 2, n_inputs, P)`` selection tensors:
        ``S[0]`` places ``wa`` and ``S[1]`` places ``wc`` in ``W`` (with the
        numerator's minus sign), ``W = S[0] * wa + S[1] * wc``. Only built for
        few inputs, where ``4 n_inputs P`` numbers are small.

        ``dL/dwa`` and ``dL/dwc`` are read from ``M = u.T @ [G/D, G N/D]``
        (shape ``(2, n_inputs, P)``) at the two entries of each weight:
        ``dL/dwa = M[0, i] - M[1, r_i]`` and ``dL/dwc = -M[0, j] - M[1, r_j]``
        (``r_i = i`` except for "signed"). ``collect_index`` holds their flat
        positions in ``M``, shape ``(2, 2, P)``, and ``collect_sign`` the signs.
        Reading only these entries matters: the other products of ``u.T @ G/D``
        pair a band with another pair's ``1 / D`` and may overflow (a band of
        1e23 and a pair of zero bands, ``D = epsilon``); multiplied by a zero
        selection, their ``inf`` would turn into NaN.
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
            rows = torch.stack([torch.stack([i, i + n]), torch.stack([j, j + n])])
            block = torch.tensor([0, 1], device=i.device).reshape(1, 2, 1)
            collect_index = (block * self.n_inputs + rows) * p + arange
            collect_sign = torch.tensor(
                [[[1.0], [-1.0]], [[-1.0], [-1.0]]], dtype=self.dtype, device=i.device
            )
            self._selection = (place, collect_index, collect_sign)
        return self._selection

    def runs(self):
        """The slices layout, built once: runs of pairs ``(i, j), (i, j + 1), ...``.

        A list of ``(start, stop, i, j)`` Python ints: pairs ``start`` to
        ``stop - 1`` combine band ``i`` with bands ``j`` to ``j + stop - start -
        1``. Pairs in :func:`itertools.combinations` order form one run per
        band (``n_features - 1`` runs); any other list is cut where the
        pattern breaks. Reads the pairs back to the host (once per plan).
        """
        if self._runs is None:
            runs = []
            for p, (i, j) in enumerate(self.pairs.tolist()):
                if runs and runs[-1][2] == i and runs[-1][3] + p - runs[-1][0] == j:
                    runs[-1][1] = p + 1
                else:
                    runs.append([p, p + 1, i, j])
            self._runs = [tuple(run) for run in runs]
        return self._runs

    def choose(self, method, table=None):
        """The formulation for ``method``: "gather", "matmul" or "slices".

        Tables with positions (``table`` 3-D: images, series) are computed
        by "slices" for "auto" and "gather" in eager mode; traced code (compile,
        export) keeps the gather and matmul forms, whose pair layout needs no
        host read-back.
        """
        if table is not None and table.dim() == 3 and method != "matmul" and not is_compiling():
            return "slices"
        if method == "auto":
            return "matmul" if self.n_inputs <= TORCH_MATMUL_MAX_INPUTS else "gather"
        return method

    def gather_weights(self, w2):
        """``[wa | wc]`` laid out like the gathered columns."""
        return w2.repeat(2) if self.signed else w2


def band_table(x, dim):
    """``x`` with its band axis ``dim`` viewed as axis 1 of a 2-D or 3-D table.

    The axes before ``dim`` merge into the rows and those after it into the
    positions: ``(N, C)`` stays ``(N, C)``, ``(N, C, H, W)`` becomes
    ``(N, C, H * W)``, ``(N, H, W, C)`` with ``dim=-1`` becomes
    ``(N * H * W, C)``. A view (no copy) of a contiguous ``x``.
    """
    shape = x.shape
    dim = dim % len(shape)
    rows, positions = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    if positions == 1:
        return x.reshape(rows, shape[dim])
    return x.reshape(rows, shape[dim], positions)


def unband(out, shape, dim):
    """Outputs of :func:`band_table` rows laid out like the input of ``shape`` (a view)."""
    dim = dim % len(shape)
    return out.view(*shape[:dim], out.shape[1], *shape[dim + 1 :])


def _by_column(vector, table):
    """A per-column vector shaped to broadcast along axis 1 of a 2-D or 3-D table."""
    return vector if table.dim() == 2 else vector.unsqueeze(-1)


def _sum_but_columns(table):
    """Sum over the rows (and positions) of a table: one value per column."""
    return table.sum(0) if table.dim() == 2 else table.sum((0, 2))


def _cross(u, h, out):
    """``u.T @ h`` summed over rows (and positions) into ``out`` of shape (n_inputs, P)."""
    if u.dim() == 2:
        return torch.mm(u.t(), h, out=out)
    return torch.sum(torch.bmm(u, h.mT), 0, out=out)


def _columns_product(weight, h):
    """``h @ weight.T`` along axis 1 of a 2-D or 3-D table (``weight``: (n_in, n_out))."""
    return torch.mm(h, weight.t()) if h.dim() == 2 else torch.matmul(weight, h)


# torch.compiler's state queries, from torch 2.3 and 2.7 on (pyproject declares torch>=2.2):
# an older torch compiles or exports nothing through them.
is_compiling = getattr(torch.compiler, "is_compiling", lambda: False)
is_exporting = getattr(torch.compiler, "is_exporting", lambda: False)


def _write(out, op, left, right):
    """``op(left, right)`` into ``out``, a view (Dynamo rejects non-contiguous ``out=``)."""
    if is_compiling():
        out.copy_(op(left, right))
    else:
        op(left, right, out=out)


def smooth_abs(x, epsilon):
    """``sqrt(x**2 + epsilon)`` without overflowing ``x**2`` (float32 overflows above 1.8e19)."""
    floor = math.sqrt(epsilon)
    if is_exporting():
        # ONNX has no hypot: the same scaled form, m sqrt((x/m)^2 + (floor/m)^2), in basic ops.
        scale = x.abs().clamp(min=floor)
        return scale * torch.sqrt(torch.square(x / scale) + torch.square(floor / scale))
    return torch.hypot(x, x.new_tensor(floor))


def layer_input(x, variant, epsilon):
    """The columns the pairs are formed from: ``b``, ``softplus(b)`` or ``[b | r]``."""
    if variant == "softplus":
        return F.softplus(x)
    if variant == "signed":
        return torch.cat([x, smooth_abs(x, epsilon)], 1)
    return x


def input_grad(grad_u, x, variant, epsilon):
    """Chain ``dL/du`` (layer input columns) back to ``dL/dx``."""
    if variant == "softplus":
        return grad_u.mul_(torch.sigmoid(x))
    if variant == "signed":
        n = x.shape[1]
        # r = sqrt(x^2 + eps): dr/dx = x / r.
        return grad_u[:, :n] + grad_u[:, n:] * x / smooth_abs(x, epsilon)
    return grad_u


def gather_forward(u, wk, plan, keep_gathered):
    """Return ``N, D, gathered`` (``gathered`` is None unless ``keep_gathered``).

    ``wk`` is :meth:`PairPlan.gather_weights` of ``softplus([a | c])``. The
    numerator and denominator come from one weighted copy of the gathered
    columns: ``t = gathered * wk + half_epsilon`` holds ``wa b_i + eps/2`` and
    ``wc b_j + eps/2`` side by side, whose difference is ``A`` and whose sum is
    ``D`` (for "signed", ``D`` sums the ``r`` half instead).
    """
    gathered = u.index_select(1, plan.gather_index)
    wk, half_epsilon = _by_column(wk, u), _by_column(plan.half_epsilon, u)
    if keep_gathered:
        t = torch.addcmul(half_epsilon, gathered, wk)
    else:
        t = gathered.mul_(wk).add_(half_epsilon)
        gathered = None
    parts = t.split_with_sizes(plan.gather_sizes, 1)
    numerator = parts[0] - parts[1]
    denominator = parts[2] + parts[3] if plan.signed else parts[0] + parts[1]
    return numerator.div_(denominator), denominator, gathered


def gather_backward(grad, out, denominator, gathered, wk, plan, need_input, h=None):
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
    positions = gd.shape[2:]
    if h is None:
        h = gd.new_empty(gd.shape[0], len(plan.gather_index), *positions)
    if plan.signed:
        hv = h.view(gd.shape[0], 2, 2, p, *positions)
        hv[:, 0] = gd.unsqueeze(1)
        hv[:, 1] = gdn.unsqueeze(1)
    else:
        h1, h2 = h.split_with_sizes(plan.gather_sizes, 1)
        _write(h1, torch.sub, gd, gdn)
        _write(h2, torch.add, gd, gdn)
    grad_u = None
    if need_input:
        grad_u = h.new_zeros(h.shape[0], plan.n_inputs, *positions)
        grad_u.index_add_(1, plan.gather_index, h * _by_column(wk * plan.gather_sign, h))
    grad_wk = _sum_but_columns(h.mul_(gathered)).mul_(plan.gather_sign)
    grad_w2 = grad_wk[: 2 * p] + grad_wk[2 * p :] if plan.signed else grad_wk
    return grad_w2, grad_u


def matmul_weight(wa, wc, plan):
    """The ``(2, n_inputs, P)`` matrices ``[W_A, W_D]`` of :class:`PairPlan`."""
    place = plan.matmul_selection()[0]
    # Out of place: Dynamo cannot save an in-place result for the backward pass.
    return torch.addcmul(torch.mul(place[0], wa), place[1], wc)


def matmul_forward(u, weight, plan):
    """Return ``N, D`` from two GEMMs: ``A = u @ W[0]``, ``D = u @ W[1] + epsilon``.

    Two ``(n_samples, P)`` products rather than one ``(n_samples, 2P)``: ``A``
    and ``D`` come out contiguous and ``N`` overwrites ``A`` in place.
    """
    if u.dim() == 2:
        numerator = torch.mm(u, weight[0])
        denominator = torch.addmm(plan.epsilon_row, u, weight[1])
    else:  # (rows, bands, positions): a 1 x 1 convolution, weight.T @ u per row
        numerator = torch.matmul(weight[0].t(), u)
        per_row = weight[1].t().expand(u.shape[0], -1, -1)
        denominator = torch.baddbmm(plan.epsilon_row.unsqueeze(-1), per_row, u)
    # |A| <= D in exact arithmetic, but the two products round apart (a GEMM kernel may
    # fuse a multiply-add in one and not the other): a signed index came out at 1 + 1 ulp.
    return numerator.div_(denominator).clamp_(-1.0, 1.0), denominator


def matmul_backward(grad, out, denominator, u, weight, plan, need_input):
    """Closed-form gradients as GEMMs (same equations as :func:`gather_backward`).

    ``dL/dA = G / D`` and ``dL/dD = -G N / D``: the weight matrices get
    ``u.T @ (G / D)`` and ``-u.T @ (G N / D)``, each ``wa``/``wc`` collecting its
    two entries, and the input ``(G / D) @ W[0].T - (G N / D) @ W[1].T``. One
    ``n_samples x P`` temporary holds ``G / D``, then ``G N / D``; ``grad`` is
    not modified.
    """
    h = grad / denominator
    m = out.new_empty(2, plan.n_inputs, plan.n_pairs)
    _cross(u, h, m[0])
    grad_u = _columns_product(weight[0], h) if need_input else None
    h.mul_(out)
    _cross(u, h, m[1])
    if need_input and h.dim() == 2:
        grad_u.addmm_(h, weight[1].t(), alpha=-1)
    elif need_input:
        grad_u.sub_(_columns_product(weight[1], h))
    _, collect_index, collect_sign = plan.matmul_selection()
    grad_w2 = torch.take(m, collect_index).mul_(collect_sign).sum(1).view(-1)
    return grad_w2, grad_u


def _run_slices(plan, run):
    """Pair rows and the band columns ``b_i``, ``b_j``, ``r_i``, ``r_j`` of a run (slices)."""
    start, stop, i, j = run
    shift = plan.n_features if plan.signed else 0
    width = stop - start
    return (
        slice(start, stop),
        slice(i, i + 1),
        slice(j, j + width),
        slice(i + shift, i + shift + 1),
        slice(j + shift, j + shift + width),
    )


def slice_forward(u, w2, plan):
    """Return ``N, D`` of a 3-D table ``(rows, n_inputs, positions)``, reading bands as slices.

    ``w2`` is ``softplus([a | c])``. A run of pairs ``(i, j) ... (i, j + m - 1)``
    (:meth:`PairPlan.runs`) takes band ``i`` as a broadcast column and bands
    ``j:j+m`` as a slice of ``u`` (views, no gathered copy) and writes its rows
    of ``A = wa b_i - wc b_j`` and ``D = wa r_i + wc r_j + epsilon`` (``r = b``
    except for "signed") in place: one multiplication and one fused
    multiply-add per output, against ``n_inputs`` of each in the matmul form.
    """
    rows, _, positions = u.shape
    wa, wc = w2.unsqueeze(-1).split(plan.n_pairs)
    out = u.new_empty(rows, plan.n_pairs, positions)
    denominator = torch.empty_like(out)
    for run in plan.runs():
        pairs, bi, bj, ri, rj = _run_slices(plan, run)
        wa_run, wc_run = wa[pairs], wc[pairs]
        torch.mul(u[:, bi], wa_run, out=out[:, pairs]).addcmul_(u[:, bj], wc_run, value=-1)
        torch.mul(u[:, ri], wa_run, out=denominator[:, pairs]).addcmul_(u[:, rj], wc_run)
    denominator.add_(plan.epsilon)
    return out.div_(denominator), denominator


def _run_dots(table, u, runs, column):
    """``sum(table * u[:, column])`` over rows and positions for each pair row of ``table``.

    ``column`` is 1 (``b_i``) or 3 (``r_i``) of the run tuples: one band per
    run, so each run is a row vector times its rows, ``(1, X) @ (X, m)`` per
    table row (a matrix-vector product: no temporary of the table's size).
    """
    dots = [torch.matmul(u[:, run[column]], table[:, run[0]].mT).sum(0) for run in runs]
    return torch.cat(dots, 1).view(-1)


def slice_backward(grad, out, denominator, u, w2, plan, need_input):
    """Closed-form gradients of :func:`slice_forward`; ``denominator`` is overwritten.

    With ``K = G / D**2``, the derivatives of Proposition 2.1 written over
    ``D**2`` (``b_i D - A r_i = wc (b_i r_j + b_j r_i) + eps b_i``) give

        dL/dwa =   wc S_x + eps S_i,     dL/dwc = -(wa S_x + eps S_j),

    ``S_x = sum K (b_i r_j + b_j r_i)`` (``2 sum K b_i b_j`` unless "signed"),
    ``S_i = sum K b_i``, ``S_j = sum K b_j``, sums over rows and positions.
    Unlike ``G / D - G N / D``, no term cancels another when ``N`` is near
    +-1. ``K`` is written over ``D``; ``S_i`` is read from it by
    matrix-vector products (``b_i`` is one band per run), then ``K b_j`` is
    taken in place for ``S_j`` (a sum) and ``S_x`` (products with ``r_i``).
    "signed" needs ``K r_j`` as well, in one more table.

    The input gradient is ``dL/db_i = wa G / D``, ``dL/db_j = -wc G / D``,
    ``dL/dr_i = -wa G N / D``, ``dL/dr_j = -wc G N / D``, added into each
    run's columns. Returns ``dL/d[wa | wc]`` (2P,) and ``dL/du`` (or None).
    """
    wa, wc = w2.unsqueeze(-1).split(plan.n_pairs)
    runs = [_run_slices(plan, run) for run in plan.runs()]
    grad_u = None
    if need_input:
        grad_u = torch.zeros_like(u)
        gd = grad / denominator
        gdn = gd * out
        for pairs, bi, bj, ri, rj in runs:
            wa_run, wc_run = wa[pairs], wc[pairs]
            # Band i sums over the run's pairs ((1, m) @ (rows, m, positions)); bands j, one each.
            grad_u[:, bi].add_(torch.matmul(wa_run.t(), gd[:, pairs]))
            grad_u[:, bj].addcmul_(gd[:, pairs], wc_run, value=-1)
            grad_u[:, ri].sub_(torch.matmul(wa_run.t(), gdn[:, pairs]))
            grad_u[:, rj].addcmul_(gdn[:, pairs], wc_run, value=-1)
        del gd, gdn
    k = torch.div(grad, denominator.square_(), out=denominator)
    s_i = _run_dots(k, u, runs, 1)
    if plan.signed:
        t = torch.empty_like(k)
        for pairs, *_, rj in runs:
            torch.mul(k[:, pairs], u[:, rj], out=t[:, pairs])
        s_x = _run_dots(t, u, runs, 1)
        del t
    for pairs, _, bj, *_ in runs:
        k[:, pairs].mul_(u[:, bj])
    s_j = k.sum(2).sum(0)
    s_xj = _run_dots(k, u, runs, 3)
    s_x = s_x + s_xj if plan.signed else 2 * s_xj
    wa, wc = wa.squeeze(-1), wc.squeeze(-1)
    grad_w2 = torch.cat([wc * s_x + plan.epsilon * s_i, -(wa * s_x + plan.epsilon * s_j)])
    return grad_w2, grad_u
