"""Scenes on a GPU: pixel tables screened, checked, cast and evaluated on the device.

A fitted sknd model that lives on a GPU evaluates a scene with its torch network there.
What limited it before was the host (benchmarks/RESULTS.md, "GPU"): each chunk was
screened for no-data, validated and cast by numpy, and copied from pageable memory.
:class:`DevicePixels` moves all of that to the device. A scene's pixel table goes in
chunks of ``chunk_pixels`` through two pinned staging buffers: the host copies chunk
``k + 1`` into one while the copy stream moves chunk ``k`` to the device and the compute
stream screens it (NaN and ``nodata`` rows), summarises it for the input checks (one
small vector per chunk), casts it to float64, runs the network (in float64, as
:func:`sknd.networks.forward_rows`) and decodes its outputs (labels, probabilities,
targets) with the fill value at no-data rows, and copies the result back into a pinned
buffer, which the host copies into the output one chunk later.

The checks are those of the estimators' validation
(:func:`sknd._data._validation.check_band_values`, the same errors and warnings): the per-chunk
summaries (smallest and largest valid value, each band's largest magnitude, whether an output is not
finite) are read once at the end, and a chunk whose summary trips a check is checked again on the
host to raise the very error the CPU path raises. Outputs go into a new array: a failed call changes
nothing of the caller's.

Without CUDA (the tests) the same code runs on CPU tensors, without pinned memory or
streams.
"""

import copy
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from .._data._validation import MAX_ABS_BAND_VALUE, RANGE_FACTOR, check_band_values
from ..networks import rows_per_pass
from ._device import device_memory
from ._pixels import DEFAULT_CHUNK_PIXELS

__all__ = []

#: Pixels per chunk on the device when the caller keeps sknd.raster's default
#: (:data:`sknd._inference._pixels.DEFAULT_CHUNK_PIXELS`, sized for the CPU): on a 4096 x
#: 4096 x 10 float32 scene the rate grew with the chunk up to this size, each chunk costing
#: about a millisecond of host work (benchmarks/RESULTS.md, "Training epochs as CUDA graphs,
#: scenes on the device").
DEVICE_CHUNK_PIXELS = 2**22

#: numpy dtypes read as they are, and those read through a signed type of the same width
#: (torch has no arithmetic on uint16 and uint32): the bits, widened on the device.
_DIRECT = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.uint8,
                                 np.int16, np.int32, np.int64, np.bool_)}  # fmt: skip
_UNSIGNED = {np.dtype(np.uint16): (np.int16, 0xFFFF), np.dtype(np.uint32): (np.int32, 0xFFFFFFFF)}


def supported_dtype(dtype):
    """Whether a pixel table of ``dtype`` can be read on the device."""
    return np.dtype(dtype) in _DIRECT or np.dtype(dtype) in _UNSIGNED


# ----------------------------------------------------------------------- decoding
class _Constant:
    """A numpy array wanted on a device: copied there once, on first use."""

    def __init__(self, array):
        self.array = array
        self.copies = {}

    def on(self, device):
        copy_ = self.copies.get(device)
        if copy_ is None:
            copy_ = self.copies[device] = torch.as_tensor(self.array, device=device)
        return copy_


class _Labels:
    """Class codes on the device (``classes`` index), labels on the device or the host."""

    def __init__(self, classes):
        self.classes = np.asarray(classes)
        self.device_classes = _Constant(self.classes)

    def maps_on_host(self, spec):
        """Whether labels in ``spec.dtype`` are made on the host (strings, other types)."""
        numeric = self.classes.dtype.kind in "biuf" and self.classes.dtype in _DIRECT
        return not numeric or spec.dtype not in _DIRECT

    def values(self, output):
        if output.shape[1] == 1:
            return (output[:, 0] > 0).long()
        return output.argmax(1)  # ties: the first column, as numpy's argmax

    def on_device(self, codes, spec):
        """The labels of ``codes`` in ``spec.dtype`` (see :meth:`maps_on_host`)."""
        return self.device_classes.on(codes.device)[codes].to(_torch_dtype(spec.dtype))

    def to_host(self, codes):
        return self.classes[codes]


class _Values:
    """Probabilities (``proba``) or regression targets (``mean``, ``scale``), float64."""

    def __init__(self, proba=False, mean=None, scale=None, ndim=2):
        self.proba = proba
        self.mean = _Constant(mean)
        self.scale = _Constant(scale)
        self.ndim = ndim

    def values(self, output):
        if self.proba and output.shape[1] == 1:
            positive = torch.sigmoid(output[:, 0])
            return torch.stack([1 - positive, positive], 1)
        if self.proba:
            return torch.softmax(output, 1)
        device = output.device
        values = output * self.scale.on(device) + self.mean.on(device)  # as sknd._data._decoding
        return values.reshape(-1) if self.ndim == 1 else values

    def maps_on_host(self, spec):
        return False

    def on_device(self, values, spec):
        return values.to(_torch_dtype(spec.dtype))

    def to_host(self, values):
        return values


def _torch_dtype(dtype):
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


# ------------------------------------------------------------------------ the chunk
class _Chunk:
    """What the device computed for one chunk: its values, no-data mask and summary."""

    def __init__(self, values, invalid, summary):
        self.values = values
        self.invalid = invalid
        self.summary = summary


class DevicePixels:
    """A fitted sknd network evaluated on pixel tables on its device (internal).

    Built by :meth:`for_task`; a pixel function as :mod:`sknd._inference._pixels` takes them (a
    table in, the method's values out), with :meth:`fill_table` for whole scenes.
    """

    single_threaded_blas = False

    def __init__(self, module, decoder, device, *, non_negative, estimator_name,
                 feature_names, band_range=None):  # fmt: skip
        self.device = device
        self._network = module  # copied to the device in float64 on first use
        self._float64 = None
        self.decoder = decoder
        # Larger passes than on the CPU: a GPU's memory holds them, and each pass costs launches.
        self.rows = 16 * rows_per_pass(module)
        self.non_negative = non_negative
        self.estimator_name = estimator_name
        self.feature_names = feature_names
        self.band_range = None if band_range is None else np.asarray(band_range, dtype=float)

    @classmethod
    def for_task(cls, module, task, method, device, **checks):
        """``method`` ("predict" or "predict_proba") of a network and task, on ``device``."""
        classes = getattr(task, "classes", None)
        if method == "predict_proba":
            decoder = _Values(proba=True)
        elif classes is not None:
            decoder = _Labels(classes)
        else:
            decoder = _Values(mean=task.mean, scale=task.decode_scale, ndim=task.ndim)
        return cls(module, decoder, device, **checks)

    @property
    def module(self):
        """The network in float64 on the device (as :func:`sknd.networks.forward_rows` runs it)."""
        if self._float64 is None:
            module = copy.deepcopy(self._network).double().eval().to(self.device)
            for layer in module.modules():
                # The ND layers' own input check reads every pass back to the host; the
                # chunks' summaries check the same (see DevicePixels._check_summaries).
                if hasattr(layer, "check_input"):
                    layer.check_input = False
            self._float64 = module
        return self._float64

    # ------------------------------------------------------------------ tables
    def __call__(self, X):
        """The method's values for the pixel table ``X`` (no no-data rows)."""
        X = np.ascontiguousarray(X)
        if not supported_dtype(X.dtype):
            X = X.astype(np.float64)
        parts = []
        with device_memory(f"evaluating {len(X)} pixels", "chunk_pixels"):
            for start in range(0, max(len(X), 1), 2**20):
                chunk = self._compute(self._upload(X[start : start + 2**20]), None, None, X.dtype)
                self._check_summaries(X[start : start + 2**20], chunk.summary.cpu()[None], 0)
                parts.append(self.decoder.to_host(chunk.values.cpu().numpy()))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _upload(self, table):
        reading = _UNSIGNED.get(table.dtype)
        if reading is None:
            return torch.from_numpy(table).to(self.device)
        return torch.from_numpy(table.view(reading[0])).to(self.device)

    def _read(self, raw, dtype):
        """The device table ``raw`` (as uploaded from ``dtype``) as float64."""
        reading = _UNSIGNED.get(dtype)
        if reading is None:
            return raw.to(torch.float64)
        return raw.to(torch.int64).bitwise_and_(reading[1]).to(torch.float64)

    @torch.no_grad()
    def _compute(self, raw, nodata, columns, dtype):
        """Screen, summarise, run and decode one chunk (read from numpy ``dtype``) on the device."""
        if columns is not None:  # a device tensor of band positions
            raw = raw.index_select(1, columns)
        x = self._read(raw, dtype)
        invalid = _invalid_rows(raw, x, nodata)
        if invalid is not None:
            x.masked_fill_(invalid.unsqueeze(1), 0.0)  # checked and run as zeros, then filled
        parts = [x.amin().reshape(1), x.amax().reshape(1)]
        parts_out = [self.module(part) for part in x.split(self.rows)]
        output = parts_out[0] if len(parts_out) == 1 else torch.cat(parts_out)
        bad = ~torch.isfinite(output).all(1)
        if invalid is not None:
            bad &= ~invalid
        parts.append(bad.any().reshape(1).to(torch.float64))
        if self.band_range is not None:
            parts.append(x.abs().amax(0))
        return _Chunk(self.decoder.values(output), invalid, torch.cat(parts))

    # ------------------------------------------------------------------ checks
    def _check_summaries(self, table, summaries, first_row, nodata=None, columns=None,
                         chunk_pixels=None):  # fmt: skip
        """Raise (or warn) as the host checks do for the first chunk whose summary trips one."""
        for k, summary in enumerate(summaries.numpy()):
            low, high, bad = summary[:3]
            trips = not (math.isfinite(low) and math.isfinite(high))
            trips = trips or max(-low, high) > MAX_ABS_BAND_VALUE
            trips = trips or (self.non_negative and low < 0) or bad
            if self.band_range is not None:
                limit = np.abs(self.band_range).max(axis=1) * RANGE_FACTOR
                trips = trips or bool(np.any((summary[3:] > limit) & (limit > 0)))
            if trips:
                size = chunk_pixels or len(table)
                rows = table[first_row + k * size : first_row + (k + 1) * size]
                self._host_check(rows, nodata, columns, bool(bad))

    def _host_check(self, rows, nodata, columns, bad_output):
        if columns is not None:
            rows = rows[:, columns]
        rows = rows[~_host_invalid(rows, nodata)]
        try:
            check_band_values(
                rows if rows.dtype in (np.float32, np.float64) else rows.astype(np.float64),
                name="pixels",
                estimator_name=self.estimator_name,
                feature_names=self.feature_names,
                non_negative=self.non_negative,
                source_dtype=rows.dtype,
                band_range=self.band_range,
            )
        except ValueError as error:
            raise ValueError(
                f"{error} (Rows count the pixels of one chunk of the image.) If such a value "
                "marks no-data, pass it as nodata=... and those pixels are skipped."
            ) from None
        if bad_output:
            raise ValueError(
                f"{self.estimator_name} computed non-finite outputs for some pixels: these "
                "inputs are outside what the model can evaluate in float32. Check them for "
                "extreme values, and please report the case to the sknd developers."
            )

    # ------------------------------------------------------------------ scenes
    def fill_table(self, table, out, spec, *, chunk_pixels, nodata, columns, n_jobs=1):
        """Fill ``out`` (``(n, *spec.tail)``) with the values of the pixel table ``table``.

        ``table`` is C-contiguous ``(n, n_bands)``; no-data rows (NaN or ``nodata`` in a
        band of ``columns``) get ``spec.fill``. Returns False, doing nothing, for tables
        or outputs of types the device does not hold (then the caller goes chunk by chunk).
        """
        host_map = self.decoder.maps_on_host(spec)
        if not supported_dtype(table.dtype) or not (host_map or spec.dtype in _DIRECT):
            return False
        if np.ndim(nodata) == 1 and columns is not None:
            nodata = np.asarray(nodata)[columns]
        if chunk_pixels == DEFAULT_CHUNK_PIXELS:
            chunk_pixels = DEVICE_CHUNK_PIXELS
        with device_memory("evaluating a scene", f"chunk_pixels (now {chunk_pixels})"):
            pipeline = _Pipeline(self, table, out, spec, chunk_pixels, n_jobs)
            index = None if columns is None else torch.as_tensor(columns, device=self.device)
            summaries = pipeline.run(nodata, index)
        self._check_summaries(table, summaries, 0, nodata, columns, chunk_pixels)
        return True

    def finish(self, chunk, spec):
        """A chunk's final values on the device (class codes where the host maps labels)."""
        if self.decoder.maps_on_host(spec):
            return chunk.values
        values = self.decoder.on_device(chunk.values, spec)
        if chunk.invalid is not None:
            shape = (-1,) + (1,) * (values.dim() - 1)
            values = values.masked_fill(chunk.invalid.reshape(shape), spec.fill)
        return values


def _invalid_rows(raw, x, nodata):
    """Rows holding NaN or ``nodata`` in a band of the device table (None: no check needed)."""
    invalid = None
    if raw.dtype.is_floating_point:
        invalid = torch.isnan(raw).any(1)
    if nodata is None:
        return invalid
    values = np.broadcast_to(np.asarray(nodata, dtype=float), (raw.shape[1],)).tolist()
    for band, value in enumerate(values):
        if math.isnan(value):
            continue
        # Floats compare in their own dtype (as numpy does with a Python float), integers in
        # float64, which holds them all.
        equal = raw[:, band] == value if raw.dtype.is_floating_point else x[:, band] == value
        invalid = equal if invalid is None else invalid.logical_or_(equal)
    return invalid


def _host_invalid(rows, nodata):
    """The same rows on the host (error path only)."""
    invalid = np.zeros(len(rows), dtype=bool)
    if rows.dtype.kind == "f":
        invalid |= np.isnan(rows).any(axis=1)
    if nodata is not None:
        values = np.broadcast_to(np.asarray(nodata, dtype=float), (rows.shape[1],))
        for band, value in enumerate(values.tolist()):
            if not math.isnan(value):
                invalid |= rows[:, band] == value
    return invalid


class _Pipeline:
    """Chunks of a table through pinned staging buffers, copy and compute streams."""

    def __init__(self, network, table, out, spec, chunk_pixels, n_jobs):
        self.network = network
        self.table = table
        self.out = out
        self.spec = spec
        self.size = min(chunk_pixels, len(table))
        self.n_jobs = n_jobs
        cuda = network.device.type == "cuda"
        self.host_map = network.decoder.maps_on_host(spec)
        reading = _UNSIGNED.get(table.dtype)
        self.source = table if reading is None else table.view(reading[0])
        self.stages = [self._stage(cuda) for _ in range(2)]
        self.copy_stream = torch.cuda.Stream(network.device) if cuda else None
        self.compute_stream = torch.cuda.Stream(network.device) if cuda else None

    def _stage(self, cuda):
        source = torch.from_numpy(self.source[:1])
        host_in = torch.empty((self.size,) + tuple(source.shape[1:]), dtype=source.dtype,
                              pin_memory=cuda)  # fmt: skip
        out_dtype = torch.int64 if self.host_map else _torch_dtype(self.spec.dtype)
        host_out = torch.empty((self.size,) + self.spec.tail, dtype=out_dtype, pin_memory=cuda)
        device_in = torch.empty_like(host_in, device=self.network.device)
        events = {}
        if cuda:
            events = {name: torch.cuda.Event() for name in ("arrived", "consumed", "done")}
        return {"in": host_in, "out": host_out, "device": device_in, "events": events}

    def run(self, nodata, columns):
        """Fill the output; return the chunks' summaries (on the host)."""
        n = len(self.table)
        bounds = [(start, min(start + self.size, n)) for start in range(0, n, self.size)]
        summaries = []
        pending = None
        pool = ThreadPoolExecutor(self.n_jobs) if self.n_jobs > 1 else None
        try:
            for k, (start, stop) in enumerate(bounds):
                stage = self.stages[k % len(self.stages)]
                self._upload(stage, start, stop, pool)
                summaries.append(self._compute(stage, stop - start, nodata, columns))
                if pending is not None:
                    self._download(*pending)
                pending = (stage, start, stop)
            self._download(*pending)
            if self.compute_stream is not None:
                torch.cuda.current_stream().wait_stream(self.compute_stream)
            return torch.stack(summaries).cpu()
        finally:
            if pool is not None:
                pool.shutdown()
            if self.compute_stream is not None:  # no copy may outlive its buffers
                torch.cuda.synchronize(self.network.device)

    def _upload(self, stage, start, stop, pool):
        events = stage["events"]
        if events:
            events["arrived"].synchronize()  # the last copy out of this staging buffer is done
        host = stage["in"][: stop - start].numpy()
        _copy_rows(host, self.source[start:stop], pool, self.n_jobs)
        if not events:
            stage["device"][: stop - start].copy_(stage["in"][: stop - start])
            return
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_event(events["consumed"])  # the compute read it
            stage["device"][: stop - start].copy_(stage["in"][: stop - start], non_blocking=True)
            events["arrived"].record(self.copy_stream)

    def _compute(self, stage, length, nodata, columns):
        events = stage["events"]
        network = self.network
        if not events:
            chunk = network._compute(stage["device"][:length], nodata, columns, self.table.dtype)
            stage["invalid"] = chunk.invalid
            stage["out"][:length].copy_(network.finish(chunk, self.spec))
            return chunk.summary
        with torch.cuda.stream(self.compute_stream):
            self.compute_stream.wait_event(events["arrived"])
            chunk = network._compute(stage["device"][:length], nodata, columns, self.table.dtype)
            events["consumed"].record(self.compute_stream)
            stage["invalid"] = chunk.invalid  # read by the host after "done" (string labels)
            stage["out"][:length].copy_(network.finish(chunk, self.spec), non_blocking=True)
            events["done"].record(self.compute_stream)
        return chunk.summary

    def _download(self, stage, start, stop):
        if stage["events"]:
            stage["events"]["done"].synchronize()
        values = stage["out"][: stop - start].numpy()
        target = self.out[start:stop]
        if not self.host_map:
            np.copyto(target, values)
            return
        target[...] = self.network.decoder.to_host(values)
        invalid = stage["invalid"]
        if invalid is not None:
            target[invalid.cpu().numpy()] = self.spec.fill


def _copy_rows(target, source, pool, n_jobs):
    """``target[...] = source``, in ``n_jobs`` threads of rows (numpy releases the GIL)."""
    if pool is None or len(source) < 2 * n_jobs:
        np.copyto(target, source)
        return
    step = -(-len(source) // n_jobs)
    parts = [slice(start, start + step) for start in range(0, len(source), step)]
    list(pool.map(lambda part: np.copyto(target[part], source[part]), parts))
