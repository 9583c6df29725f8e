"""Public docstrings agree with the signatures and constraints they document.

numpydoc's validator checks names and order of the documented parameters against each
signature; the checks below add what it cannot see: the ``{...}`` options and the
``default=`` values written in a parameter's type line, compared with the estimators'
``_parameter_constraints`` and the signatures' defaults.
"""

import ast
import importlib
import inspect
import re

import pytest
import torch
from sklearn.utils._param_validation import StrOptions

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd._docstrings import Substitution

numpydoc_docscrape = pytest.importorskip("numpydoc.docscrape")
numpydoc_validate = pytest.importorskip("numpydoc.validate")

PUBLIC_MODULES = [
    "sknd",
    "sknd.nn",
    "sknd.networks",
    "sknd.onnx",
    "sknd.raster",
    "sknd.inspection",
    "sknd.bands",
    "sknd.indices",
    "sknd.datasets",
    "sknd.experiments",
]
ESTIMATORS = [NDClassifier, NDRegressor, NDTransformer]

# numpydoc's codes for a docstring that disagrees with its signature: missing docstring,
# undocumented parameter, documented parameter that does not exist, wrong order, a
# parameter without a description.
SIGNATURE_CODES = {"GL08", "PR01", "PR02", "PR03", "PR07"}


def _public_callables():
    """``module.name`` (and ``module.Class.method``) of every public class and function."""
    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            names.append(f"{module_name}.{name}")
            if not inspect.isclass(obj):
                continue
            for attr, member in inspect.getmembers(obj, inspect.isfunction):
                if attr.startswith("_") or not member.__module__.startswith("sknd"):
                    continue  # private, or scikit-learn's / torch's own method
                if issubclass(obj, torch.nn.Module) and hasattr(torch.nn.Module, attr):
                    continue  # forward, extra_repr: torch's hooks, documented by torch
                names.append(f"{module_name}.{name}.{attr}")
    return names


PUBLIC = _public_callables()


def _resolve(name):
    parts = name.split(".")
    for stop in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:stop]))
        except ImportError:
            continue
        for part in parts[stop:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(name)


def _documented_parameters(obj):
    """``{name: type line}`` of the Parameters section (``a, b : int`` gives both)."""
    doc_class = (
        numpydoc_docscrape.ClassDoc if inspect.isclass(obj) else numpydoc_docscrape.FunctionDoc
    )
    doc = doc_class(obj, config={"show_class_members": False})
    documented = {}
    for parameter in doc["Parameters"]:
        for name in parameter.name.split(","):
            documented[name.strip().lstrip("*")] = parameter.type
    return documented


def _signature(obj):
    return inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_matches_signature(name):
    errors = numpydoc_validate.validate(name)["errors"]
    mismatches = [f"{code}: {message}" for code, message in errors if code in SIGNATURE_CODES]
    assert not mismatches, f"{name}:\n" + "\n".join(mismatches)


@pytest.mark.parametrize("name", PUBLIC)
def test_documented_defaults_are_the_signature_defaults(name):
    obj = _resolve(name)
    signature = _signature(obj)
    wrong = []
    for parameter, type_line in _documented_parameters(obj).items():
        match = re.search(r"default=(.+)$", type_line)
        if match is None or parameter not in signature:
            continue
        try:
            documented = ast.literal_eval(match.group(1).strip())
        except (ValueError, SyntaxError):
            continue  # a named constant such as DEFAULT_CHUNK_PIXELS
        actual = signature[parameter].default
        if documented != actual or type(documented) is not type(actual):
            wrong.append(f"{parameter}: documented default={documented!r}, signature {actual!r}")
    assert not wrong, f"{name}: " + "; ".join(wrong)


def _string_options(constraints):
    options = set()
    for constraint in constraints:
        if isinstance(constraint, StrOptions):
            options |= set(constraint.options)
    return options


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_documented_options_are_the_accepted_ones(estimator):
    """Options offered by the docstring are exactly those the constraints accept."""
    wrong = []
    for parameter, type_line in _documented_parameters(estimator).items():
        accepted = _string_options(estimator._parameter_constraints[parameter])
        if not accepted:
            continue
        braces = re.match(r"\{(.*)\}", type_line)
        if braces:
            offered = set(ast.literal_eval(f"[{braces.group(1)}]"))
        else:
            offered = set(re.findall(r'"([^"]*)"', type_line.split("default=")[0]))
        if offered != accepted:
            wrong.append(f"{parameter}: documents {sorted(offered)}, accepts {sorted(accepted)}")
    assert not wrong, f"{estimator.__name__}: " + "; ".join(wrong)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_estimators_take_keyword_only_parameters(estimator):
    parameters = list(inspect.signature(estimator).parameters.values())
    assert parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    with pytest.raises(TypeError):
        estimator(3)


def test_substitution_indents_sections_like_their_placeholder():
    @Substitution(params="x : int\n    The value.\n", notes="A note\n{with braces}.")
    def function(x):
        """Summary.

        Parameters
        ----------
        {params}

        Notes
        -----
        {notes}
        """

    assert "\n        x : int\n            The value.\n\n" in function.__doc__
    assert "\n        A note\n        {with braces}.\n" in function.__doc__


def test_substitution_rejects_a_missing_placeholder():
    with pytest.raises(ValueError, match="lacks placeholders"):

        @Substitution(params="x : int")
        def function(x):
            """Summary without placeholders."""
