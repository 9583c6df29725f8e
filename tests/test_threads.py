"""The thread policy of sknd._threads: one setting per process, reference-counted."""

import threading

import torch

from sknd._threads import one_thread, single_threaded_blas, threadpool_controller


def _blas_threads():
    # Read from the main thread: OpenBLAS may report another count to a worker thread.
    return [pool["num_threads"] for pool in threadpool_controller().select(user_api="blas").info()]


def _enter_and_leave():
    with one_thread(), single_threaded_blas():
        pass


def test_one_thread_is_reference_counted_across_threads_and_restores_the_settings():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    blas_before = _blas_threads()
    single = [1] * len(blas_before)
    try:
        with one_thread():
            assert (torch.get_num_threads(), _blas_threads()) == (1, single)
            worker = threading.Thread(target=_enter_and_leave)
            worker.start()
            worker.join()
            # Another thread entered and left: the limits stay while this block runs.
            assert (torch.get_num_threads(), _blas_threads()) == (1, single)
        assert (torch.get_num_threads(), _blas_threads()) == (2, blas_before)
    finally:
        torch.set_num_threads(previous)
