"""The ND layer's math, in each dialect, and its band pairs.

Holds the formula in numpy (``_formula``, the reference), in torch (``_torch``: the
forward pass and the closed-form backward), as torch's autograd function (``_autograd``),
as compiled numba kernels for inference (``_kernels``), and the band pairs a layer is
built on (``_pairs``, with ``_screening``'s univariate scores).

May import: numpy, torch, numba and :mod:`sknd._sensors`; nothing else of sknd, so that
every other part can stand on it.
"""
