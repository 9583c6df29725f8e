"""A fitted network outside torch's training loop: evaluation and devices.

Holds the numpy / numba evaluator of the layer records (``_evaluator``), the chunked
loop over pixel tables (``_pixels``) and its device pipeline (``_device_pixels``), the
choice of device and its out-of-memory errors (``_device_choice``, ``_device``) and class
colours (``_colors``). Model files are :mod:`sknd._model_file`, exports
:mod:`sknd._export`: both stand on this package.

May import: :mod:`sknd._nd`, :mod:`sknd._data`, :mod:`sknd.networks`,
:mod:`sknd.bands`, :mod:`sknd.indices` and :mod:`sknd._threads`; not the estimators,
training, model files or exports (the estimators and model files that ``_pixels`` serves
are looked up in ``sys.modules``, never imported). Torch only in the device modules, so
that a model file evaluates without torch.
"""
