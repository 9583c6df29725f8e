"""A fitted network outside torch's training loop: evaluation, devices, files, exports.

Holds the numpy / numba evaluator of the layer records (``_evaluator``), the chunked
loop over pixel tables (``_pixels``) and its device pipeline (``_device_pixels``), the
choice of device and its out-of-memory errors (``_device_choice``, ``_device``), class
colours (``_colors``), model files (``_model_file``) and the whole model as openEO
processes, Earth Engine code and STAC MLM Items, and its indices as formulas
(``_export``).

May import: :mod:`sknd._nd`, :mod:`sknd._data`, :mod:`sknd.networks`,
:mod:`sknd.bands`, :mod:`sknd.indices` and :mod:`sknd._threads`; not the estimators or
training (a model file evaluates without them).
"""
