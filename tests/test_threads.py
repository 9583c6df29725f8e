"""The thread policy of sknd._threads: one setting per process, reference-counted."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from sknd import NDClassifier
from sknd._training._fused import FusedTrainer

_REFERENCE_COUNTING = """
import threading

import torch

from sknd._threads import one_thread, single_threaded_blas, threadpool_controller


def blas_threads():
    # Read from the main thread: OpenBLAS may report another count to a worker thread.
    return [pool["num_threads"] for pool in threadpool_controller().select(user_api="blas").info()]


def enter_and_leave():
    with one_thread(), single_threaded_blas():
        pass


torch.set_num_threads(2)
blas_before = blas_threads()
single = [1] * len(blas_before)
with one_thread():
    assert (torch.get_num_threads(), blas_threads()) == (1, single)
    worker = threading.Thread(target=enter_and_leave)
    worker.start()
    worker.join()
    # Another thread entered and left: the limits stay while this block runs.
    assert (torch.get_num_threads(), blas_threads()) == (1, single)
assert (torch.get_num_threads(), blas_threads()) == (2, blas_before)
"""


# A fresh process (most of its time imports torch): behind the slow marker.
@pytest.mark.slow
def test_one_thread_is_reference_counted_across_threads_and_restores_the_settings():
    # In a fresh interpreter: the settings are process-wide, and threads left by other
    # tests (dask's pools) may enter and leave the same contexts meanwhile.
    result = subprocess.run(
        [sys.executable, "-c", _REFERENCE_COUNTING], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------- the policy inside fits
def test_fits_and_predictions_run_in_one_thread_and_restore_the_setting(band_data):
    from sknd import _threads

    X, y = band_data()
    seen = []
    original = FusedTrainer.run_epoch

    def spy(self, iterator):
        seen.append(torch.get_num_threads())
        return original(self, iterator)

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        FusedTrainer.run_epoch = spy
        # depth=2: one training run (depth="auto" may train a second, deeper one).
        model = NDClassifier(depth=2, max_epochs=2, random_state=0).fit(X, y)
        assert torch.get_num_threads() == 2
        model.predict(np.tile(X, (600, 1)))  # 72,000 rows
        assert torch.get_num_threads() == 2
    finally:
        FusedTrainer.run_epoch = original
        torch.set_num_threads(previous)
    assert seen == [1, 1]
    assert _threads._threads_users == 0


def test_torch_threads_is_safe_across_threads():
    import threading

    from sknd._threads import torch_threads

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    inside = threading.Barrier(2)
    leave_first = threading.Event()
    counts = []

    def first():
        with torch_threads(1):
            inside.wait()
            counts.append(torch.get_num_threads())
        leave_first.set()

    def second():
        with torch_threads(1):
            inside.wait()
            leave_first.wait()
            counts.append(torch.get_num_threads())  # still 1 after the first one left

    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counts == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


# ------------------------------------------------------- the caller's own settings
def _blas_threads():
    from sknd._threads import threadpool_controller

    return [p["num_threads"] for p in threadpool_controller().select(user_api="blas").info()]


def _mkl_threads():
    """MKL's threads inside torch (None without MKL): only ``torch.set_num_threads`` sets them."""
    for line in torch.__config__.parallel_info().splitlines():
        if "mkl_get_max_threads()" in line:
            return int(line.split(":")[1])
    return None


def test_a_fit_runs_every_pool_in_one_thread_under_the_callers_limits(band_data):
    from threadpoolctl import threadpool_limits

    from sknd._training import _convex_start

    X, y = band_data()
    seen = []
    original = _convex_start.Components.__init__

    def spy(self, *args, **kwargs):
        seen.append((torch.get_num_threads(), _mkl_threads(), set(_blas_threads())))
        original(self, *args, **kwargs)

    previous = torch.get_num_threads()
    try:
        _convex_start.Components.__init__ = spy
        torch.set_num_threads(2)
        # An outer OpenMP limit makes torch report one thread while MKL keeps its own:
        # the policy sets torch's threads anyway (a fit was 10x slower under load).
        with threadpool_limits(2, user_api="blas"), threadpool_limits(1, user_api="openmp"):
            blas, threads = _blas_threads(), torch.get_num_threads()
            NDClassifier(depth=2, max_epochs=2, random_state=0).fit(X, y)
            assert (_blas_threads(), torch.get_num_threads()) == (blas, threads)
        assert torch.get_num_threads() == 2
    finally:
        _convex_start.Components.__init__ = original
        torch.set_num_threads(previous)
    assert seen
    for torch_count, mkl_count, blas_counts in seen:
        assert torch_count == 1 and blas_counts == {1}
        assert mkl_count in (None, 1)


def test_an_interrupted_fit_leaves_the_callers_settings(band_data):
    from threadpoolctl import threadpool_limits

    from sknd import _threads

    X, y = band_data()
    original = FusedTrainer.run_epoch

    def interrupt(self, iterator):
        raise KeyboardInterrupt

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        FusedTrainer.run_epoch = interrupt
        with threadpool_limits(2, user_api="blas"):
            blas = _blas_threads()
            with pytest.raises(KeyboardInterrupt):
                NDClassifier(depth=2, max_epochs=2, random_state=0).fit(X, y)
            assert _blas_threads() == blas
        assert torch.get_num_threads() == 2
    finally:
        FusedTrainer.run_epoch = original
        torch.set_num_threads(previous)
    assert (_threads._threads_users, _threads._single_threaded_blas.users) == (0, 0)


_LATE_LIBRARY = """
import numpy as np
from sknd._threads import single_threaded_blas, threadpool_controller

threadpool_controller()  # built while numpy's BLAS alone is loaded
import scipy.linalg  # loads scipy's own BLAS, where the wheels vendor one

with single_threaded_blas():
    pools = threadpool_controller().select(user_api="blas").info()
    assert {p["num_threads"] for p in pools} == {1}, pools
"""


@pytest.mark.slow
def test_a_library_loaded_after_the_first_limit_is_limited_too():
    result = subprocess.run(
        [sys.executable, "-c", _LATE_LIBRARY], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
