"""Structure rules the package keeps: short functions, no private reach-through, test
modules on shared ground.

- Every function in ``sknd/`` has at most 60 lines of code (docstrings, blank and
  comment-only lines not counted); ruff's C901 (``pyproject.toml``) caps its branches.
- No module uses another module's private name: no ``from .x import _name`` of a function
  or class (private *modules* such as ``sknd._estimators._fit`` are the package's own and may be
  imported), and no ``obj._name`` read where ``obj`` is not ``self``/``cls`` and ``_name``
  is not defined by the reading module itself (a class's own private attributes, read by
  the module that defines the class, are fine). Dunder names are public protocol. The
  estimators' package-internal hooks (``_fast_evaluator``, ``_model_content``, ...) are
  private methods whose docstring says "internal hook" and names who calls them.
- No test module imports another test module: shared data and fixtures live in
  ``tests/conftest.py`` or in helper modules that are not test modules (``nd_oracle.py``).
- No module in ``sknd/`` has more than 800 lines (physical lines): a backstop, not a target.
- A public estimator's MRO holds at most 4 classes defined in sknd, and no internal function
  of ``sknd/_estimators`` or ``sknd/_training`` takes more than 6 parameters
  (``self``/``cls`` not counted): one fit is one object with its stages as methods
  (``sknd._estimators._fit.Fit``), and the recipe's steps take the rows they read as parts
  (``sknd._data._parts.Part``, ``Split``).
- The package root holds at most 14 modules (the public ones, ``__init__``, ``_version``
  and a few every part uses), and no folder of ``sknd`` holds more than 17: the private
  code lives in one package per stage (docs/architecture.md).
- The import graph of ``sknd``'s modules (a package's ``__init__`` counted as a module;
  top-level and function-level imports, relative and absolute) has no cycle, and no module
  imports from a package ``__init__`` above it (``from .. import name`` of a name the
  parent package defines, ``from sknd import ...`` inside ``sknd``): the version lives in
  ``sknd._version``, not in ``sknd/__init__.py``.
- Each stage package imports only packages below it (:data:`NOT_IMPORTED`; model files
  and exports never the estimators or training), and model files, exports and the scene
  command load without torch, scikit-learn or pandas (:data:`LOAD_WITHOUT_TORCH`).
"""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sknd"
TESTS = ROOT / "tests"
MAX_LINES = 60
MAX_MODULE_LINES = 800
# torch internals the package reads, each behind one function and pinned by a test that
# fails when torch changes it.
TORCH_INTERNALS = {
    "_version": "sknd.nn._version_of, pinned by test_nn.py's "
    "test_pair_plan_follows_in_place_changes_of_pairs",
}


def _modules(root):
    return sorted(root.rglob("*.py"))


def _label(path, node):
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _docstring_lines(node):
    body = getattr(node, "body", [])
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return set(range(first.lineno, first.end_lineno + 1))
    return set()


def code_lines(lines, node):
    """Lines of code of a function: no docstring, blank or comment-only lines."""
    skip = _docstring_lines(node)
    count = 0
    for number in range(node.lineno, node.end_lineno + 1):
        text = lines[number - 1].strip()
        if number not in skip and text and not text.startswith("#"):
            count += 1
    return count


def long_functions(root=PACKAGE, limit=MAX_LINES):
    """``path:line name (n lines)`` for each function over ``limit`` lines of code."""
    found = []
    for path in _modules(root):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = code_lines(lines, node)
                if n > limit:
                    found.append(f"{_label(path, node)} {node.name} ({n} lines)")
    return found


def _own_names(tree):
    """Private names a module defines: its functions, classes, assignments and the
    attributes its classes set on ``self``/``cls``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return {name for name in names if _is_private(name)}


def _is_submodule(path, node, name):
    """Whether ``from <node.module> import name`` imports a module of the package."""
    if node.level == 0:
        if not (node.module or "").startswith("sknd"):
            return False
        base = ROOT.joinpath(*node.module.split("."))
    else:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        if node.module:
            base = base.joinpath(*node.module.split("."))
    return (base / f"{name}.py").exists() or (base / name / "__init__.py").exists()


def _private_imports(path, tree):
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0 and not (node.module or "").startswith("sknd"):
            continue
        for alias in node.names:
            if _is_private(alias.name) and not _is_submodule(path, node, alias.name):
                found.append(f"{_label(path, node)} imports {alias.name}")
    return found


def internal_hooks(root=PACKAGE):
    """Private methods documented as internal hooks (their docstring says so)."""
    hooks = set()
    for path in _modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(node.name):
                doc = ast.get_docstring(node) or ""
                if "internal hook" in " ".join(doc.split()):
                    hooks.add(node.name)
    return hooks


def _private_reads(path, tree, allowed):
    own = _own_names(tree) | allowed
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "super":
            continue
        if node.attr in own:
            continue
        found.append(f"{_label(path, node)} reads .{node.attr}")
    return found


def private_reach_through(root=PACKAGE):
    """Each use of another module's private name in the package."""
    allowed = internal_hooks(root) | set(TORCH_INTERNALS)
    found = []
    for path in _modules(root):
        tree = ast.parse(path.read_text())
        found += _private_imports(path, tree) + _private_reads(path, tree, allowed)
    return found


def long_modules(root=PACKAGE, limit=MAX_MODULE_LINES):
    """``path (n lines)`` for each module over ``limit`` physical lines."""
    found = []
    for path in _modules(root):
        n = len(path.read_text().splitlines())
        if n > limit:
            found.append(f"{path.relative_to(ROOT)} ({n} lines)")
    return found


def module_name(path, root=PACKAGE):
    """Dotted name of a module file; a package's ``__init__.py`` is the package."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:k]) for k in range(1, len(parts))}


def _imported(importer, is_package, node, known):
    """Dotted names one import statement imports: ``from X import n`` is the submodule
    ``X.n`` where there is one, else ``X`` (n is a name ``X`` defines)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    stem = node.module or ""
    if node.level:
        parts = importer.split(".")
        parts = parts[: len(parts) - node.level + is_package] + ([stem] if stem else [])
        stem = ".".join(parts)
    return [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]


def _run_on_load(tree):
    """The nodes of a module that run when it is loaded: all but function bodies."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo += [
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        ]


def import_graph(root=PACKAGE, on_load=False):
    """``{module: {imported module: "path:line"}}`` over the modules of ``root``, from every
    import statement, at the top or inside functions; with ``on_load``, from those a module
    runs when it is loaded only (not inside functions)."""
    paths = {module_name(path, root): path for path in _modules(root)}
    graph = {}
    for name, path in paths.items():
        edges = graph.setdefault(name, {})
        tree = ast.parse(path.read_text())
        for node in _run_on_load(tree) if on_load else ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(name, path.name == "__init__.py", node, paths):
                # Importing a.b.c runs the __init__ of a.b first, unless it runs already.
                implied = _ancestors(target) - _ancestors(name)
                for module in sorted(({target} | implied) & paths.keys() - {name}):
                    edges.setdefault(module, _label(path, node))
    return graph


def _reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for other in graph[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def import_cycles(graph):
    """Each import circle (a strongly connected component), with the imports among its modules."""
    reach = {name: _reachable(graph, name) for name in graph}
    found = []
    for name in sorted(graph):
        circle = {other for other in reach[name] if name in reach[other]}
        if circle and name == min(circle):
            edges = [
                f"{graph[a][b]} imports {b}"
                for a in sorted(circle)
                for b in sorted(graph[a])
                if b in circle
            ]
            found.append(f"{', '.join(sorted(circle))}: {'; '.join(edges)}")
    return found


def upward_imports(graph):
    """Each import of a package ``__init__`` by a module inside that package."""
    return [
        f"{label} imports {target}"
        for name, edges in sorted(graph.items())
        for target, label in edges.items()
        if target in _ancestors(name)
    ]


def test_imports_between_test_modules():
    """No test module imports another: shared ground is tests/conftest.py."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            else:
                continue
            found += [
                f"{_label(path, node)} imports {name}"
                for name in modules
                if name.split(".")[0].startswith("test_")
            ]
    assert found == []


def test_function_length():
    """No function in sknd/ over 60 lines of code."""
    assert long_functions() == []


def test_no_private_reach_through():
    """No module of sknd/ uses another module's private name."""
    assert private_reach_through() == []


def test_checks_catch_what_they_look_for(tmp_path, monkeypatch):
    """The checks flag the patterns they are meant to flag, and nothing else."""
    package = tmp_path / "sknd"
    package.mkdir()
    (package / "_helpers.py").write_text("def _hidden():\n    return 1\n")
    (package / "user.py").write_text(
        "from . import _helpers\n"
        "from ._helpers import _hidden\n"
        "class A:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def f(self, other):\n"
        "        return other._mine + other._theirs + self._x + other.__class__\n"
        "    def _hook(self):\n"
        '        """A value (internal hook of\n        sknd.other)."""\n'
        "def g(other):\n"
        "    return other._hook()\n"
        "def long():\n" + "    x = 1\n" * 61 + '    """not a docstring"""\n'
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # labels relative to it
    reached = private_reach_through(package)
    long = long_functions(package)
    assert reached == ["sknd/user.py:2 imports _hidden", "sknd/user.py:7 reads ._theirs"]
    assert long == ["sknd/user.py:13 long (63 lines)"]


def test_module_length():
    """No module in sknd/ over 800 lines."""
    found = long_modules()
    assert not found, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(found)


MAX_ROOT_MODULES = 14
MAX_FOLDER_MODULES = 17


def crowded_folders(root=PACKAGE):
    """``folder (n modules)`` for the root over :data:`MAX_ROOT_MODULES` modules and each
    folder below it over :data:`MAX_FOLDER_MODULES`."""
    found = []
    for folder in sorted({root, *(path.parent for path in _modules(root))}):
        count = len(list(folder.glob("*.py")))
        limit = MAX_ROOT_MODULES if folder == root else MAX_FOLDER_MODULES
        if count > limit:
            found.append(f"{folder.relative_to(root.parent)} ({count} modules)")
    return found


def test_folders_hold_few_modules(tmp_path):
    """At most 14 modules in the package root, at most 17 in any folder below it."""
    assert crowded_folders() == []
    package = tmp_path / "sknd"
    (package / "stage").mkdir(parents=True)
    for name in range(MAX_ROOT_MODULES + 1):
        (package / f"m{name}.py").write_text("")
    for name in range(MAX_FOLDER_MODULES):
        (package / "stage" / f"m{name}.py").write_text("")
    # The root one over, the stage folder at its limit.
    assert crowded_folders(package) == ["sknd (15 modules)"]


def test_no_import_cycle_or_upward_import():
    """sknd's modules import each other without a circle and never from a package above."""
    graph = import_graph()
    found = import_cycles(graph)
    assert not found, "import circles:\n" + "\n".join(found)
    found = upward_imports(graph)
    assert not found, "imports from a package __init__ above:\n" + "\n".join(found)


#: Stage packages and the packages they never import, not even inside a function: each
#: package's ``__init__`` docstring says which it may import. Model files stand on exports
#: (an MLM Item's artifact type, ``export_model``), both on inference (the evaluator,
#: class colours); none of them on training or the estimators.
NOT_IMPORTED = {
    "sknd._data": (
        "sknd._estimators",
        "sknd._training",
        "sknd._inference",
        "sknd._model_file",
        "sknd._export",
    ),
    "sknd._training": ("sknd._estimators", "sknd._inference", "sknd._model_file", "sknd._export"),
    "sknd._inference": (
        "sknd._estimators",
        "sknd._training",
        "sknd._model_file",
        "sknd._export",
    ),
    "sknd._export": ("sknd._estimators", "sknd._training", "sknd._model_file"),
    "sknd._model_file": ("sknd._estimators", "sknd._training"),
}
#: Modules that load without torch, scikit-learn or pandas (xarray imports pandas): a
#: model file loads, predicts and exports, and the scene command runs, without them
#: (tests/export/test_model_file.py and tests/raster/test_raster_cli.py check the same at run time).
LOAD_WITHOUT_TORCH = (
    "sknd._model_file",
    "sknd._export",
    "sknd._inference._evaluator",
    "sknd._inference._pixels",
    "sknd.raster._cli",
)
HEAVY = ("torch", "skorch", "sklearn", "pandas", "xarray")


def forbidden_imports(graph, rules=NOT_IMPORTED):
    """Each import of a package its rule in ``rules`` forbids."""
    return [
        f"{label} imports {target}"
        for name, edges in sorted(graph.items())
        for package, forbidden in rules.items()
        if name == package or name.startswith(package + ".")
        for target, label in edges.items()
        if any(target == other or target.startswith(other + ".") for other in forbidden)
    ]


def _third_party_on_load(path):
    """``{top-level name: "path:line"}`` of what a module imports outside sknd on load."""
    found = {}
    for node in _run_on_load(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "sknd":
                found.setdefault(name.split(".")[0], _label(path, node))
    return found


def heavy_on_load(root=PACKAGE, starts=LOAD_WITHOUT_TORCH, heavy=HEAVY):
    """``"start: path:line imports name"`` for each heavy import that loading a module of
    ``starts`` runs (through sknd's modules it loads, its parent packages included)."""
    graph = import_graph(root, on_load=True)
    paths = {module_name(path, root): path for path in _modules(root)}
    found = []
    for start in starts:
        loaded = {start} | _ancestors(start)
        for name in list(loaded):
            loaded |= _reachable(graph, name)
        for name in sorted(loaded):
            found += [
                f"{start}: {label} imports {imported}"
                for imported, label in _third_party_on_load(paths[name]).items()
                if imported in heavy
            ]
    return found


def test_stage_packages_import_only_what_stands_below():
    """No stage package imports one its rule forbids (model files and exports never the
    estimators or training), and model files, exports and the scene command load
    without torch, scikit-learn or pandas."""
    found = forbidden_imports(import_graph())
    assert not found, "imports a stage package's rule forbids:\n" + "\n".join(found)
    found = heavy_on_load()
    assert not found, "heavy imports on load:\n" + "\n".join(found)


def test_stage_checks_catch_what_they_look_for(tmp_path, monkeypatch):
    """Forbidden imports, at the top or in a function; heavy imports on load only, through
    the modules loaded and the parent packages, not inside functions."""
    package = tmp_path / "sknd"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import top\n")
    (package / "top.py").write_text("import torch\n")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("from . import b\ndef f():\n    from .. import top\n")
    (package / "low" / "b.py").write_text("import numpy\ndef f():\n    import pandas\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # labels relative to it
    rules = {"sknd.low": ("sknd.top",)}
    assert forbidden_imports(import_graph(package), rules) == ["sknd/low/a.py:3 imports sknd.top"]
    assert heavy_on_load(package, ("sknd.low.b",), ("torch", "pandas")) == [
        "sknd.low.b: sknd/top.py:1 imports torch"
    ]
    assert heavy_on_load(package, ("sknd.top",), ("pandas",)) == []


def test_import_checks_catch_what_they_look_for(tmp_path, monkeypatch):
    """Circles through function-level, relative and absolute imports and a subpackage's
    ``__init__``, each circle once; upward imports; long modules."""
    package = tmp_path / "sknd"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '1'\nfrom .a import f\n")
    (package / "a.py").write_text("def f():\n    from .sub.b import g\n")
    (package / "sub" / "b.py").write_text("from .. import __version__\n")
    (package / "sub" / "__init__.py").write_text("from . import c\n")
    (package / "sub" / "c.py").write_text("import sknd.d\n")
    (package / "d.py").write_text("from sknd.sub.c import x\n")
    (package / "low.py").write_text(
        "from .sub import c\nfrom . import a\n" + "x = 1\n" * (MAX_MODULE_LINES - 1)
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # labels relative to it
    graph = import_graph(package)
    assert graph["sknd.low"] == {
        "sknd.a": "sknd/low.py:2",
        "sknd.sub": "sknd/low.py:1",
        "sknd.sub.c": "sknd/low.py:1",
    }
    assert import_cycles(graph) == [
        "sknd, sknd.a, sknd.sub.b: sknd/__init__.py:2 imports sknd.a; "
        "sknd/a.py:2 imports sknd.sub.b; sknd/sub/b.py:1 imports sknd",
        "sknd.d, sknd.sub, sknd.sub.c: sknd/d.py:1 imports sknd.sub; "
        "sknd/d.py:1 imports sknd.sub.c; sknd/sub/__init__.py:1 imports sknd.sub.c; "
        "sknd/sub/c.py:1 imports sknd.d",
    ]
    assert upward_imports(graph) == ["sknd/sub/b.py:1 imports sknd"]
    assert long_modules(package) == [f"sknd/low.py ({MAX_MODULE_LINES + 1} lines)"]


# ------------------------------------------------------------------ one fit, read top-down
#: At most this many classes defined in sknd in a public estimator's MRO (scikit-learn's
#: MLPClassifier and skorch's NeuralNetClassifier hold two of their own): the estimator, its
#: base, the learned indices as features and the export methods; the fit's machinery is
#: one object (``sknd._estimators._fit.Fit``), not mixins.
MAX_SKND_CLASSES = 4
#: At most this many parameters per function of :data:`FEW_PARAMETER_PACKAGES`, ``self``
#: and ``cls`` not counted (``*args`` and ``**kwargs`` count one each): state travels on the
#: ``Fit`` object, rows as parts, not as positional arguments.
MAX_PARAMETERS = 6
#: The packages whose internal functions take at most :data:`MAX_PARAMETERS` parameters:
#: the estimators' machinery and the training it calls.
FEW_PARAMETER_PACKAGES = ("_estimators", "_training")
#: The estimators' public API, whose signatures scikit-learn's conventions set (every
#: parameter in ``__init__``) and users call: its public methods and ``__init__`` are
#: exempt from :data:`MAX_PARAMETERS`.
PUBLIC_API_CLASSES = {
    "BaseND",
    "NDClassifier",
    "NDRegressor",
    "NDTransformer",
    "ExportMixin",
    "LearnedIndicesMixin",
}


def parameter_count(node):
    """The parameters of a function, a leading ``self`` or ``cls`` not counted."""
    arguments = node.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    count = len(names) - (names[:1] in (["self"], ["cls"]))
    return count + (arguments.vararg is not None) + (arguments.kwarg is not None)


def many_parameters(root=PACKAGE / "_estimators", limit=MAX_PARAMETERS):
    """``path:line name (n parameters)`` for each internal function over ``limit``
    parameters (``self``/``cls`` not counted), the public API of
    :data:`PUBLIC_API_CLASSES` exempt."""
    found = []
    for path in _modules(root):
        tree = ast.parse(path.read_text())
        owner = {
            method: cls.name
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef)
            for method in cls.body
        }
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if owner.get(node) in PUBLIC_API_CLASSES and not _is_private(node.name):
                continue
            n = parameter_count(node)
            if n > limit:
                found.append(f"{_label(path, node)} {node.name} ({n} parameters)")
    return found


def test_estimators_hold_few_sknd_classes():
    """A public estimator's MRO holds at most 4 classes defined in sknd."""
    import sknd

    for name in ("NDClassifier", "NDRegressor", "NDTransformer"):
        own = [
            cls.__qualname__
            for cls in getattr(sknd, name).__mro__
            if cls.__module__.split(".")[0] == "sknd"
        ]
        assert len(own) <= MAX_SKND_CLASSES, f"{name}'s MRO holds {len(own)} sknd classes: {own}"


def test_estimator_functions_take_few_parameters(tmp_path, monkeypatch):
    """No internal function of sknd/_estimators or sknd/_training takes more than 6
    parameters, ``self`` and ``cls`` not counted; the check counts as it says."""
    found = [line for name in FEW_PARAMETER_PACKAGES for line in many_parameters(PACKAGE / name)]
    assert not found, f"over {MAX_PARAMETERS} parameters:\n" + "\n".join(found)
    (tmp_path / "m.py").write_text(
        "def f(a, b, c, d, e, g, *h):\n    pass\n"
        "class NDClassifier:\n"
        "    def __init__(self, a, b, c, d, e, g, h):\n        pass\n"
        "    def fit(self, a, b, c, d, e, g, h):\n        pass\n"
        "    def _fit(self, a, b, c, d, e, g):\n        pass\n"
        "    def _many(self, a, b, c, d, e, g, **h):\n        pass\n"
        "    @classmethod\n"
        "    def _make(cls, a, b, c, d, e, g):\n        pass\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)  # labels relative to it
    assert many_parameters(tmp_path) == ["m.py:1 f (7 parameters)", "m.py:10 _many (7 parameters)"]
