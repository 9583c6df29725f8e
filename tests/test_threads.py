"""The thread policy of sknd._threads: one setting per process, reference-counted."""

import threading

import torch

from sknd._threads import one_thread, single_threaded_blas, threadpool_controller


def _blas_threads():
    return [pool["num_threads"] for pool in threadpool_controller().select(user_api="blas").info()]


def test_one_thread_nests_across_threads_and_restores_the_settings():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    blas_before = _blas_threads()
    first_inside, second_left = threading.Event(), threading.Event()
    seen = []

    def first():
        with one_thread():
            first_inside.set()
            second_left.wait()
            # The second user left: the limits stay while this one is inside.
            seen.append((torch.get_num_threads(), _blas_threads()))

    def second():
        first_inside.wait()
        with one_thread(), single_threaded_blas():
            seen.append((torch.get_num_threads(), _blas_threads()))
        second_left.set()

    try:
        workers = [threading.Thread(target=first), threading.Thread(target=second)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert seen == [(1, [1] * len(blas_before))] * 2
        assert torch.get_num_threads() == 2
        assert _blas_threads() == blas_before
    finally:
        torch.set_num_threads(previous)
