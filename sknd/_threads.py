"""Thread policy of sknd: torch's threads and the BLAS / OpenMP thread pools.

Thread policy: everything sknd computes (fit, ``partial_fit``, predict, transform, the
raster path, the experiments' tasks) runs in ONE thread of every pool it calls, whatever
the caller's environment: torch's intra-op threads (and with them torch's OpenMP pool and
MKL), the BLAS of numpy and scipy (OpenBLAS here), and the OpenMP pools of other
libraries (scikit-learn's). sknd's layers and convex fits are small: extra threads save
little even on idle cores, and on shared cores (other processes busy) the pools' threads
spin while they wait for a core and made a default fit several times slower
(benchmarks/RESULTS.md, "Thread pools as users run them"). One thread also makes results
independent of the core count. Parallelism belongs outside: GridSearchCV /
cross_val_score ``n_jobs`` (loky worker processes, which joblib starts with one thread
each when ``n_jobs`` = cores), dask or joblib over image chunks, the raster path's
``n_jobs``.

torch's own OpenMP pool is set through ``torch.set_num_threads``, never limited from
outside: that call also sets MKL's threads inside torch, which no thread-pool library
sees. An outer limit of torch's OpenMP makes ``torch.get_num_threads()`` report 1, so
that a policy which only changed the count where it differed left MKL's two spinning
threads in place (a default fit several times slower under load, as in
benchmarks/RESULTS.md, "Target 3: threads"): :func:`torch_threads` sets the
count on entry whatever it reports.

Every setting changed here is process-wide, while fits, predictions and image chunks may
run concurrently in threads of one process (joblib's threading backend, dask's threaded
scheduler, the chunk workers of :mod:`sknd.raster`). Each context below is therefore
reference-counted: the first entry changes the setting, the value in force before it is
restored when the last one leaves (also after an exception or a KeyboardInterrupt). The
caller's own settings (``torch.set_num_threads``, an outer ``threadpoolctl`` limit) are
what they were after every call.

- :func:`torch_threads`: torch intra-op threads;
- :func:`single_threaded_blas`: BLAS limited to one thread (the torch-free raster path,
  whose chunk workers would oversubscribe the cores with a multi-threaded BLAS each);
- :func:`one_thread`: all of them, for the estimators' methods and the experiments' tasks
  (usable as a decorator).
"""

import contextlib
import os
import sys
import threading

__all__ = ["one_thread", "single_threaded_blas", "torch_threads"]

_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = None


@contextlib.contextmanager
def torch_threads(n_threads):
    """Run the block with ``n_threads`` torch intra-op threads.

    Safe when entered from several threads at once: the thread count in force
    before the first entry is restored when the last one exits.
    """
    global _threads_users, _threads_saved
    import torch  # here: the BLAS limits below serve torch-free raster inference too

    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = torch.get_num_threads()
            # Always: the count torch reports may come from an outer OpenMP limit, and
            # only this call sets MKL's threads too (module docstring).
            torch.set_num_threads(n_threads)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                torch.set_num_threads(_threads_saved)


_controller_lock = threading.Lock()
_controller = None
_controller_modules = -1


def threadpool_controller():
    """The process's :class:`threadpoolctl.ThreadpoolController`.

    Built anew only when modules were imported since the last one: a pool's library is
    loaded by an import (scipy's OpenBLAS by ``scipy.linalg``, torch's OpenMP by torch),
    and a controller knows only the libraries loaded when it was built. Building one
    scans the process's libraries, which a prediction on a few rows should not pay for
    each time.
    """
    global _controller, _controller_modules
    from threadpoolctl import ThreadpoolController

    with _controller_lock:
        if _controller_modules != len(sys.modules):
            _controller = ThreadpoolController()
            _controller_modules = len(sys.modules)
        return _controller


def _torch_library(controller):
    """Whether a pool's library is torch's own (set by ``torch.set_num_threads``)."""
    spec = sys.modules.get("torch")
    root = os.path.dirname(getattr(spec, "__file__", None) or "") if spec else ""
    return bool(root) and os.path.realpath(controller.filepath).startswith(
        os.path.realpath(root) + os.sep
    )


class _SingleThreadedPools:
    """Reference-counted limit of the thread pools of ``user_api`` to one thread."""

    def __init__(self, user_api):
        self.user_api = user_api
        self.lock = threading.Lock()
        self.users = 0
        self.limiter = None

    def _limit(self):
        pools = threadpool_controller().select(user_api=self.user_api)
        pools.lib_controllers = [c for c in pools.lib_controllers if not _torch_library(c)]
        return pools.limit(limits=1)

    @contextlib.contextmanager
    def __call__(self):
        with self.lock:
            if self.users == 0:
                self.limiter = self._limit()
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
    """Run the block with one torch thread and single-threaded BLAS and OpenMP pools.

    The policy of the module docstring, for the estimators' methods (as a decorator:
    ``@one_thread()``) and for one task of the experiments' protocol in a joblib
    worker. Reference-counted like the others.
    """
    with torch_threads(1), _single_threaded_blas(), _single_threaded_openmp():
        yield
