"""Shared ground of the test modules: data builders as fixtures.

Test modules never import each other (tests/test_architecture.py checks it): what
several of them need lives here, or in a helper module that is no test module
(``nd_oracle.py``, ``formula_eval.py``, ``raster_files.py``). The fixtures return
builders, so that a test asks for the size it needs; builders return fresh arrays, so
the fixtures are safe to share over the session.
"""

import os
import re

import numpy as np
import pytest
import torch

#: Estimator variants whose scikit-learn checks (tests/test_common.py) are exhaustive rather
#: than first-line: the checks of the default NDClassifier, NDRegressor and NDTransformer run
#: in ``make test``, those of these variants carry the slow marker (``make test-all``, CI).
SLOW_CHECK_VARIANTS = ("variant=", "architecture=", "depth=", "passthrough=")
#: The openEO graph reproductions (tests/export/test_export.py) kept in ``make test``: one model,
#: its class codes and probabilities; the graphs of the other models take 2-30 s each on the
#: local executor and carry the slow marker (the Earth Engine code of every model stays fast).
FAST_OPENEO_GRAPHS = ("test_openeo_graph_reproduces_saved_model[multiclass-{}]",)
#: What a test run without the test extra lacks, and the command that installs it.
TEST_EXTRA = 'pip install -e ".[test]" (in the sknd checkout; `make test` does it in .venv)'
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_MISSING = set()


def pytest_configure(config):
    """One BLAS thread in each pytest-xdist worker (`make test`: one worker per core).

    numpy's and scipy's OpenBLAS start a thread per core, which spin while they wait for
    work: two workers on two cores, with another job beside them, spent most of their CPU
    time fighting over the cores
    (tests/estimators/test_estimators.py::test_fits_in_threads_match_serial_fits took
    29.5 s, 3.2 s with one BLAS thread; the whole `make test`, 925 s of CPU, 268 s).
    Only the workers' own libraries are limited: torch's threads stay as they are (tests
    check that fits restore them), and the fresh processes that tests start keep the
    defaults (tests/test_threads.py reads the BLAS threads there).
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import scipy.linalg  # noqa: F401 (loads scipy's OpenBLAS, to be limited too)
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


def pytest_collection_modifyitems(items):
    for item in items:
        estimator = item.name.split("-check_")[0]
        if item.path.name == "test_common.py" and any(v in estimator for v in SLOW_CHECK_VARIANTS):
            item.add_marker(pytest.mark.slow)
        if (
            item.path.name == "test_export.py"
            and item.name.startswith("test_openeo_graph_reproduces_saved_model[")
            and item.name not in FAST_OPENEO_GRAPHS
        ):
            item.add_marker(pytest.mark.slow)


def pytest_collectreport(report):
    """Remember the modules a test module could not import (for the summary below)."""
    if report.failed:
        _MISSING.update(MISSING_MODULE.findall(str(report.longrepr)))


def pytest_terminal_summary(terminalreporter):
    if _MISSING:
        terminalreporter.write_line(
            f"Test modules could not import {', '.join(sorted(_MISSING))}: the tests need the "
            f"test extra, {TEST_EXTRA}.",
            red=True,
        )


def _band_data(
    n_samples=120, n_bands=5, *, seed=0, low=0.05, high=0.5, pair=(1, 2), scale=1.0, cuts=None
):
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, size=(n_samples, n_bands))
    i, j = pair
    if cuts is None:
        return X, (scale * X[:, i] > X[:, j]).astype(int)
    ratio = (X[:, i] - X[:, j]) / (X[:, i] + X[:, j])
    return X, np.digitize(ratio, cuts)


def _task_data(task, n_samples, n_features, seed):
    generator = torch.Generator().manual_seed(seed)
    X = torch.rand(n_samples, n_features, generator=generator) + 0.05
    if task == "binary":
        y = (X[:, 0] > X[:, 1]).float().reshape(-1, 1)
        return X, y, torch.nn.BCEWithLogitsLoss(), 1
    if task == "multiclass":
        y = torch.randint(0, 3, (n_samples,), generator=generator)
        return X, y, torch.nn.CrossEntropyLoss(), 3
    y = torch.randn(n_samples, 2, generator=generator)
    return X, y, torch.nn.MSELoss(), 2


@pytest.fixture(scope="session")
def band_data():
    """The tests' one generator of labelled band tables, numpy arrays:
    ``band_data(n_samples=120, n_bands=5, *, seed=0, low=0.05, high=0.5, pair=(1, 2),
    scale=1.0, cuts=None)`` gives ``(X, y)``, ``X`` reflectance-like bands drawn uniformly
    in ``[low, high)`` by ``numpy.random.default_rng(seed)`` and ``y`` from the bands
    ``pair = (i, j)``: ``scale * X[:, i] > X[:, j]`` as 0/1, or with ``cuts`` their
    normalized difference ``(X_i - X_j) / (X_i + X_j)`` digitized at ``cuts``
    (``len(cuts) + 1`` classes, ``numpy.digitize``). A module passes the same arguments
    for the same draws: tests pin values fitted on them."""
    return _band_data


@pytest.fixture(scope="session")
def task_data():
    """``task_data(task, n_samples, n_features, seed)``: torch ``(X, y, criterion,
    n_outputs)`` for ``task`` "binary", "multiclass" or "regression" (two targets)."""
    return _task_data
