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
def test_fits_and_predictions_run_in_one_thread_and_restore_the_setting(binary_data):
    from sknd import _threads

    X, y = binary_data()
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
