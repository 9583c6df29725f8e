"""Test-suite configuration.

- One torch thread: tiny fits gain nothing from intra-op threads and slow down a lot when
  the cores are shared.
- ``SCIPY_ARRAY_API=1`` (set before scipy is imported) so that scikit-learn's
  ``check_array_api_input`` runs instead of being skipped.
- Without numba (an optional dependency), the doctest collector skips the module of the
  compiled kernels, which imports it; tests of the kernels skip themselves. Likewise the
  doctests of sknd.plotting (matplotlib) and sknd.raster (xarray).
"""

import importlib.util
import os

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

collect_ignore = [] if importlib.util.find_spec("numba") else ["sknd/_nd/_kernels.py"]
# Doctests that import other optional packages run only where those are installed.
collect_ignore += [
    path
    for path, needs in {"sknd/plotting.py": "matplotlib", "sknd/raster": "xarray"}.items()
    if importlib.util.find_spec(needs) is None
]


@pytest.fixture(params=["compiled", "numpy"])
def implementation(request, monkeypatch):
    """Run a test with numba's kernels (sknd._nd._kernels) and with the numpy fallback."""
    from sknd._inference import _evaluator

    if request.param == "compiled":
        pytest.importorskip("numba", reason="the compiled kernels need numba")
    else:
        monkeypatch.setattr(_evaluator, "_compiled_kernels", lambda: None)
    return request.param
