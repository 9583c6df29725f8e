"""The package version, written once: ``sknd.__version__``, the model files, the pickles and
the ONNX metadata read it here, and ``pyproject.toml`` reads it for the build."""

__version__ = "0.1.0.dev0"
