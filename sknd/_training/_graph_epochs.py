"""Training epochs of the fused step replayed as CUDA graphs: no launch overhead, no host sync.

On a GPU a step of sknd's small networks is a chain of some forty small kernels, each
launched by the host, at a cost per step whatever the batch (benchmarks/RESULTS.md, "GPU"),
so that GPU fits paid off only from large batches up. :class:`GraphEpochs` runs the epochs
of a :class:`~sknd._training._fused.FusedTrainer` as a few *segments* of up to
:data:`SEGMENT_STEPS` steps. A segment gathers its rows in the epoch's order
(``index_select`` on the device), runs the forward, closed-form backward and Adam step of
each of its batches (:meth:`~sknd._training._adam.FlatAdam.scaled_step`, whose step sizes are read
from a device buffer) and adds its per-sample losses to the epoch's total, all into
static buffers, so that it is captured once as a CUDA graph and replayed every epoch. The
host launches two copies and one replay per segment, and reads the total once per epoch
(for the history and early stopping), as before.

Shuffles are drawn from the estimator's CPU generator, as on the CPU, so that GPU fits
stay reproducible and follow CPU fits (tests/estimators/test_estimators.py): into pinned memory,
copied without blocking, and the next epoch's order is drawn while the GPU runs the
current one. The generator is left as if the next order had not been drawn; the drawn
order is used only if nothing else drew from the generator in between.

The first segment of the first epoch runs eagerly (on the stream the capture uses), which
warms up what the capture needs. CPU runs (``capture=False``) run every segment eagerly: the
tests compare them with the step-by-step epoch of :class:`~sknd._training._fused.FusedTrainer`.
"""

import torch

__all__ = []

#: Steps per segment (a graph of about 40 nodes per step), and rows per segment: bounds
#: the static buffers and the time a capture takes.
SEGMENT_STEPS = 128
SEGMENT_ROWS = 2**18


class _Segment:
    """Static buffers of a segment of ``n_rows`` rows, and its graph once captured."""

    def __init__(self, n_rows, n_steps, prepared, aux, n_columns):
        self.order = torch.empty(n_rows, dtype=torch.int64, device=prepared.device)
        self.scalars = prepared.new_empty(n_steps, 2)
        self.x = prepared.new_empty(n_rows, prepared.shape[1])
        self.aux = aux.new_empty(n_rows, aux.shape[1])
        self.terms = prepared.new_empty(n_rows, n_columns)
        self.n_steps = n_steps
        self.graph = None


class _Shuffler:
    """Each epoch's order on the device, drawn from the CPU generator as the CPU path draws it."""

    def __init__(self, n_samples, device):
        cuda = device.type == "cuda"
        self.n_samples = n_samples
        self.pinned = torch.empty(n_samples, dtype=torch.int64, pin_memory=cuda)
        self.order = torch.empty(n_samples, dtype=torch.int64, device=device)
        self.copied = torch.cuda.Event() if cuda else None
        self.drawn = None  # (generator state before, after) of the order in self.pinned

    def order_of_epoch(self, generator):
        """This epoch's permutation: what ``generator`` draws next, on the device."""
        drawn, self.drawn = self.drawn, None
        if drawn is not None and torch.equal(generator.get_state(), drawn[0]):
            generator.set_state(drawn[1])
        else:
            self._wait()
            torch.randperm(self.n_samples, generator=generator, out=self.pinned)
        self.order.copy_(self.pinned, non_blocking=True)
        if self.copied is not None:
            self.copied.record()
        return self.order

    def draw_ahead(self, generator):
        """Draw the next epoch's order now, leaving ``generator`` as it was."""
        before = generator.get_state()
        self._wait()
        torch.randperm(self.n_samples, generator=generator, out=self.pinned)
        self.drawn = (before, generator.get_state())
        generator.set_state(before)

    def _wait(self):
        """Wait until the copy out of the pinned buffer is done (it is about to change)."""
        if self.copied is not None:
            self.copied.synchronize()


class GraphEpochs:
    """Epochs of ``trainer`` on one data set (``prepared``, ``aux``) as replayed segments.

    Parameters
    ----------
    trainer : sknd._training._fused.FusedTrainer
    prepared, aux : torch.Tensor
        The first block's inputs and the target columns (``FusedTrainer.prepare``).
    capture : bool
        Capture the segments as CUDA graphs (from the second epoch on); ignored off CUDA.
    """

    def __init__(self, trainer, prepared, aux, capture):
        self.trainer = trainer
        self.prepared = prepared
        self.aux = aux
        n_samples = len(prepared)
        batch_size = trainer.batch_size
        self.n_batches = -(-n_samples // batch_size)
        rows = batch_size * max(1, min(SEGMENT_STEPS, SEGMENT_ROWS // batch_size))
        self.bounds = [(start, min(start + rows, n_samples)) for start in range(0, n_samples, rows)]
        self.segments = {}
        for start, stop in self.bounds:
            n_rows = stop - start
            if n_rows not in self.segments:
                self.segments[n_rows] = _Segment(
                    n_rows, -(-n_rows // batch_size), prepared, aux, trainer.loss.n_columns
                )
        device = prepared.device
        cuda = device.type == "cuda"
        self.capture = capture and cuda
        self.stream = torch.cuda.Stream(device) if cuda else None
        self.scalars = torch.empty(self.n_batches, 2, dtype=prepared.dtype, pin_memory=cuda)
        self.scalars_copied = torch.cuda.Event() if cuda else None
        self.device_scalars = prepared.new_empty(self.n_batches, 2)
        self.total = prepared.new_zeros(())
        self.shuffler = _Shuffler(n_samples, device)
        self.unshuffled = torch.arange(n_samples, device=device)
        self.warm = False  # a segment ran eagerly: the segments can be captured
        self.constants = None  # the optimizer's constants the graphs hold
        self.capture_error = None  # why capturing failed, if it did (then all runs eagerly)

    @property
    def graphed(self):
        """Whether the epochs run as CUDA graphs."""
        return any(segment.graph is not None for segment in self.segments.values())

    @torch.no_grad()
    def run_epoch(self, iterator, weighted):
        """Train one epoch; return ``(sum of per-sample losses (tensor), n_samples, n_batches)``."""
        optimizer = self.trainer.optimizer
        if iterator.shuffle:
            order = self.shuffler.order_of_epoch(iterator.generator)
        else:
            order = self.unshuffled
        if self.scalars_copied is not None:
            self.scalars_copied.synchronize()  # the last epoch's copy is done
        self.scalars.copy_(torch.from_numpy(optimizer.step_scalars(self.n_batches)))
        self.device_scalars.copy_(self.scalars, non_blocking=True)
        if self.scalars_copied is not None:
            self.scalars_copied.record()
        constants = optimizer.constants()
        if constants != self.constants:  # betas or weight decay changed: capture again
            for segment in self.segments.values():
                segment.graph = None
            self.constants = constants
        self.total.zero_()
        step = 0
        for start, stop in self.bounds:
            segment = self.segments[stop - start]
            segment.order.copy_(order[start:stop])
            segment.scalars.copy_(self.device_scalars[step : step + segment.n_steps])
            step += segment.n_steps
            self._run(segment, weighted)
        optimizer.count_steps(self.n_batches)
        if iterator.shuffle:
            self.shuffler.draw_ahead(iterator.generator)  # while the device works
        return self.total.clone(), len(self.prepared), self.n_batches

    def _run(self, segment, weighted):
        if segment.graph is None and self.capture and self.warm:
            self._capture(segment, weighted)
        if segment.graph is not None:
            segment.graph.replay()
        elif self.stream is not None:
            # Eager runs on the capture stream: what they initialise serves the capture.
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                self._steps(segment, weighted)
            torch.cuda.current_stream().wait_stream(self.stream)
        else:
            self._steps(segment, weighted)
        # One eager segment initialises what the steps use (the BLAS handles on the stream,
        # the gather buffers): the next segments are captured, from the first epoch on.
        self.warm = True

    def _capture(self, segment, weighted):
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=self.stream):
                self._steps(segment, weighted)
        except torch.cuda.OutOfMemoryError:
            raise
        except RuntimeError as error:  # an operation that cannot be captured: run eagerly
            self.capture = False
            self.capture_error = str(error)
            return
        segment.graph = graph

    def _steps(self, segment, weighted):
        """The segment's work: gather its rows, then forward, backward and Adam per batch."""
        trainer = self.trainer
        scaled_step = trainer.optimizer.scaled_step
        torch.index_select(self.prepared, 0, segment.order, out=segment.x)
        torch.index_select(self.aux, 0, segment.order, out=segment.aux)
        batch_size = trainer.batch_size
        batches = zip(
            segment.x.split(batch_size),
            segment.aux.split(batch_size),
            segment.terms.split(batch_size),
        )
        for k, (x, aux, terms) in enumerate(batches):
            trainer.forward_backward(x, aux, terms, weighted)
            scaled_step(segment.scalars[k])
        self.total.add_(trainer.epoch_loss(segment.terms, segment.aux, weighted))
