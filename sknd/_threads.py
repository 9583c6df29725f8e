"""Thread policy of sknd: torch intra-op threads and BLAS / OpenMP thread pools.

Thread policy: fits and predictions run in ONE torch intra-op thread. sknd's layers are
small: intra-op threads save little even on idle cores, and on shared cores (other
processes busy) they made a tiny fit and a 250-band fit about 9x slower
(benchmarks/bench_threads.py, RESULTS.md). One thread also makes results independent of
the core count. Parallelism belongs outside: GridSearchCV / cross_val_score n_jobs (loky
worker processes, which joblib starts with one thread each when n_jobs = cores), dask or
joblib over image chunks.

Every setting changed here is process-wide (``torch.set_num_threads``, the BLAS and
OpenMP thread pools), while fits, predictions and image chunks may run concurrently in
threads of one process (joblib's threading backend, dask's threaded scheduler, the chunk
workers of :mod:`sknd.raster`). Each context below is therefore reference-counted: the
first entry changes the setting, the value in force before it is restored when the last
one leaves.

- :func:`torch_threads`: torch intra-op threads (estimators' fit and inference);
- :func:`single_threaded_blas`: BLAS limited to one thread while image chunks are
  processed in parallel (a multi-threaded BLAS in each would oversubscribe the cores);
- :func:`one_thread`: both, plus OpenMP, for one task of the experiments' protocol run
  in a joblib worker.
"""

import contextlib
import functools
import threading

__all__ = ["one_thread", "single_threaded_blas", "torch_threads"]

_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = None


@contextlib.contextmanager
def torch_threads(n_threads):
    """Run the block with ``n_threads`` torch intra-op threads (``None``: unchanged).

    Safe when entered from several threads at once: the thread count in force
    before the first entry is restored when the last one exits.
    """
    global _threads_users, _threads_saved
    if n_threads is None:
        yield
        return
    import torch  # here: the BLAS limits below serve torch-free raster inference too

    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = torch.get_num_threads()
        _threads_users += 1
        if torch.get_num_threads() != n_threads:
            torch.set_num_threads(n_threads)
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0 and torch.get_num_threads() != _threads_saved:
                torch.set_num_threads(_threads_saved)


@functools.cache
def threadpool_controller():
    """The process's :class:`threadpoolctl.ThreadpoolController` (built once: it is slow)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class _SingleThreadedPools:
    """Reference-counted limit of the thread pools of ``user_api`` to one thread."""

    def __init__(self, user_api):
        self.user_api = user_api
        self.lock = threading.Lock()
        self.users = 0
        self.limiter = None

    @contextlib.contextmanager
    def __call__(self):
        with self.lock:
            if self.users == 0:
                self.limiter = threadpool_controller().limit(limits=1, user_api=self.user_api)
            self.users += 1
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if self.users == 0:
                    self.limiter.restore_original_limits()
                    self.limiter = None


# One reference count per kind of pool, shared by every context below: a BLAS limit entered
# while another context already holds it (say, in a chunk worker thread inside one_thread)
# must neither take a second limiter nor restore the setting when it leaves. (A second
# limiter would record its "original" value in its own thread, where OpenBLAS may report
# its default rather than the limit in force, and restore that on exit.)
_single_threaded_blas = _SingleThreadedPools("blas")
_single_threaded_openmp = _SingleThreadedPools("openmp")


def single_threaded_blas():
    """Run BLAS single-threaded while any chunk worker of this process is running.

    Chunks are processed in parallel by threads (ours or dask's); a multi-threaded
    BLAS inside each of them would oversubscribe the cores. The BLAS setting is
    process-wide, so concurrent workers share one limit, lifted by the last to leave.
    """
    return _single_threaded_blas()


@contextlib.contextmanager
def one_thread():
    """Run the block with one torch thread and single-threaded BLAS and OpenMP.

    For one task of the experiments' protocol in a joblib worker: tiny networks
    gain nothing from intra-op threads, and on a shared machine the extra threads
    of parallel tasks only fight each other. Reference-counted like the others.
    """
    with torch_threads(1), _single_threaded_blas(), _single_threaded_openmp():
        yield
