"""Every Python code block of README.md and docs/*.md runs as written.

Each page runs as one session, like a notebook: its blocks execute in order in one
namespace (a later block may use what an earlier block of the same page defined; a block
never relies on another page). Blocks of ``>>>`` lines run as doctests. Each page runs in a
temporary working directory, offline.

The pages' printed outputs are what their code prints today (``tools/regen_docs_outputs.py``
reruns it and rewrites them; the comparison is slow, it trains), and the defaults the pages
state are those of the code's signatures.
"""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

# Optional packages a page's blocks import (the test extras have them all).
NEEDS = {
    "README.md": ["xarray", "dask", "matplotlib"],
    "raster.md": ["xarray", "dask", "distributed"],
    "model_files.md": ["xarray", "dask", "distributed"],
    "interpretation.md": ["matplotlib"],
    "experiments.md": ["matplotlib"],
    "training.md": ["dask", "dask_ml"],
    "anywhere.md": ["xarray", "dask"],
}


def python_blocks(page):
    """(line number, source) of each ```python block of a Markdown page."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(1)) for match in FENCE.finditer(text)
    ]


def test_pages_have_python_blocks():
    counts = {page.name: len(python_blocks(page)) for page in PAGES}
    assert counts["README.md"] >= 3
    assert sum(counts.values()) >= 13, counts


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


# What importing openeo-processes-dask (docs/anywhere.md runs a graph with it) warns about
# its own dependencies, as tests/export/test_export.py filters it: not sknd's.
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Support for class-based `config`")
@pytest.mark.filterwarnings("ignore:The 'stac_validator' package has been deprecated")
@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=[page.name for page in PAGES_WITH_CODE])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    blocks = python_blocks(page)
    for module in NEEDS.get(page.name, []):
        pytest.importorskip(module)
    try:  # figures, where a page draws any, on the non-interactive backend
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    try:
        for line, source in blocks:
            name = f"{page.relative_to(ROOT)}:{line}"
            if source.lstrip().startswith(">>>"):
                test = doctest.DocTestParser().get_doctest(source, namespace, name, name, line)
                result = runner.run(test, clear_globs=False)
                assert result.failed == 0, f"doctest block at {name} failed"
            else:
                exec(compile(source, name, "exec"), namespace)
    finally:
        if plt is not None:
            plt.close("all")


# ---- install commands, extras, API reference, metadata: what the docs promise about the
# package itself (cheap: nothing is built or installed).


def _pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirement_names(requirements):
    return {re.match(r"[A-Za-z0-9._-]+", req).group().lower() for req in requirements}


# Every file that may tell a reader what to install.
INSTALL_SOURCES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "Makefile",
    ROOT / ".ci" / "run",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs").glob("*.py")),
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((ROOT / "tools").glob("*")),
    *sorted(path for path in (ROOT / "benchmarks").glob("*") if path.is_file()),
    *sorted((ROOT / "sknd").rglob("*.py")),
]
# `pip install` and its words: quoted, or unquoted up to a space, quote, backtick or
# parenthesis (a bracket pair may hold commas: .[plot,fast]).
_WORD = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|(?:[^\s`'\"(),\[\]]|\[[^\]\n]*\])+")
_PIP_INSTALL = re.compile(rf"pip install((?:[ \t]+(?:{_WORD.pattern}))+)")
_OPTIONS_WITH_VALUE = {"-r", "-c", "-i", "-f", "--index-url", "--extra-index-url", "--find-links"}


def install_problems(text, extras):
    """What is wrong with each ``pip install`` command of a text, from a checkout."""
    problems = []
    for match in _PIP_INSTALL.finditer(text):
        words = [word.strip("\"'") for word in _WORD.findall(match.group(1))]
        targets, options = [], set()
        for before, word in zip([None, *words], words):
            if before in _OPTIONS_WITH_VALUE:
                continue  # an option's value
            if word.startswith("-"):
                options.add(word)
            else:
                targets.append(word.rstrip(".;:") or word)
        command = f"pip install{match.group(1)}"
        for target in targets:
            if re.match(r"sknd\b", target):
                problems.append(f"{command!r}: sknd is not on PyPI (checkout: pip install .)")
            local = re.fullmatch(r"\.?/?\[(.*)\]", target)
            for extra in local.group(1).split(",") if local else []:
                if extra.strip() not in extras:
                    problems.append(f"{command!r}: sknd has no extra {extra.strip()!r}")
            if re.match(r"torch\b", target) and not options & {"-i", "--index-url"}:
                problems.append(f"{command!r}: torch without --index-url is the CUDA build")
    return problems


def test_install_problems_finds_the_commands_that_fail():
    extras = {"plot", "geo"}
    assert install_problems('`pip install "sknd[geo]"`; pip install sknd', extras) == [
        "'pip install \"sknd[geo]\"': sknd is not on PyPI (checkout: pip install .)",
        "'pip install sknd': sknd is not on PyPI (checkout: pip install .)",
    ]
    assert install_problems("pip install -e '.[plot,dask]'", extras) == [
        "\"pip install -e '.[plot,dask]'\": sknd has no extra 'dask'"
    ]
    assert install_problems("pip install torch numpy", extras) == [
        "'pip install torch numpy': torch without --index-url is the CUDA build"
    ]
    fine = (
        '`pip install -e ".[plot,geo]"` from a checkout; pip install matplotlib '
        "(or, in the sknd checkout, pip install -e '.[plot]'). "
        "pip install torch --index-url https://download.pytorch.org/whl/cpu; pip install ."
    )
    assert install_problems(fine, extras) == []


def test_install_commands_work_from_a_checkout():
    extras = set(_pyproject()["project"]["optional-dependencies"])
    problems = []
    for path in INSTALL_SOURCES:
        text = path.read_text(encoding="utf-8")
        problems += [f"{path.relative_to(ROOT)}: {p}" for p in install_problems(text, extras)]
    assert not problems, "\n".join(problems)


def test_extras_table_matches_pyproject():
    extras = _pyproject()["project"]["optional-dependencies"]
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([\w-]+)` \| ([^|]*) \|", text, re.MULTILINE)
    table = {extra: {name.strip().lower() for name in names.split(",")} for extra, names in rows}
    assert set(table) == set(extras), "docs/install.md's extras table lists other extras"
    for extra, requirements in extras.items():
        assert table[extra] == _requirement_names(requirements), f"extra {extra!r}"


def test_api_reference_lists_every_public_module():
    """docs/conf.py's PUBLIC_MODULES (read, not run: it writes files) against sknd's modules."""
    import ast
    import pkgutil

    import sknd

    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    (listed,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PUBLIC_MODULES"
    ]
    public = {"sknd"} | {
        module.name
        for module in pkgutil.walk_packages(sknd.__path__, "sknd.")
        if not any(part.startswith("_") for part in module.name.split("."))
    }
    assert set(listed) == public


def test_license_metadata_covers_the_shipped_data():
    import glob

    project = _pyproject()["project"]
    shipped = set()
    for pattern in project["license-files"]:
        shipped |= {Path(path).resolve() for path in glob.glob(str(ROOT / pattern))}
    licenses = {"CC BY 4.0": "CC-BY-4.0", "MIT": "MIT"}
    for folder in sorted((ROOT / "sknd" / "datasets" / "data").iterdir()):
        files = [path for path in folder.iterdir() if path.name.startswith("LICENSE")]
        assert files and all(path.resolve() in shipped for path in files), folder.name
        source = (folder / "SOURCE.txt").read_text(encoding="utf-8")
        named = [spdx for name, spdx in licenses.items() if f"License: {name}" in source]
        assert named and all(spdx in project["license"].split(" AND ") for spdx in named)


def test_html_repr_links_nowhere_while_the_docs_are_not_hosted():
    """pyproject's documentation URL says placeholder: the estimators' HTML repr has no "?"
    link and no parameter links (whose pop-ups would show the docstrings' raw
    reStructuredText) to it."""
    from sknd import NDClassifier, NDRegressor, NDTransformer

    urls = _pyproject()["project"]["urls"]
    assert "Homepage" in urls  # `pip show sknd` lists it
    assert all(label == "Homepage" or "placeholder" in label for label in urls)
    for estimator in (NDClassifier(), NDRegressor(depth=3), NDTransformer()):
        assert estimator._get_doc_link() == ""
        html = estimator._repr_html_()
        assert "href=" not in html and 'class="param-doc-link"' not in html


# ---- defaults and printed outputs: what the pages say the code does.

#: "the default `name=value`", "defaults to `name=value`", "`name=value`, the default",
#: "`name=value` by default": a page stating a parameter's default.
STATED_DEFAULT = [
    re.compile(r"\bdefaults?(?: to| is)?,?\s+`(\w+)=([^`]+)`"),
    re.compile(r"`(\w+)=([^`]+)`,?\s+(?:is\s+)?(?:the|by)\s+default\b"),
]
#: Defaults that the code resolves from ``None`` at call time, as the pages state them.
RESOLVED_DEFAULTS = {("output", "class")}  # export_model: a classifier's first output


def _public_defaults():
    """``{parameter: {repr of its default}}`` over sknd's public functions, classes, methods."""
    import importlib
    import inspect
    import pkgutil

    import sknd

    names = ["sknd"] + [
        module.name
        for module in pkgutil.walk_packages(sknd.__path__, "sknd.")
        if not any(part.startswith("_") for part in module.name.split("."))
    ]
    callables = []
    for name in names:
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", []):
            obj = getattr(module, attribute)
            callables.append(obj)
            if inspect.isclass(obj):
                callables += [m for n, m in vars(obj).items() if callable(m) and n[0] != "_"]
    defaults = {}
    for obj in callables:
        try:
            parameters = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            continue
        for parameter in parameters:
            if parameter.default is not inspect.Parameter.empty:
                defaults.setdefault(parameter.name, set()).add(repr(parameter.default))
    return defaults


def test_pages_state_defaults_as_the_code_has_them():
    import ast

    defaults = _public_defaults()
    wrong = []
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for pattern in STATED_DEFAULT:
            for match in pattern.finditer(text):
                name, value = match.groups()
                assert name in defaults, f"{page.name}: {match.group()!r} names no parameter"
                stated = ast.literal_eval(value)
                if repr(stated) not in defaults[name] and (name, stated) not in RESOLVED_DEFAULTS:
                    wrong.append(f"{page.name}: {match.group()!r} (code: {defaults[name]})")
    assert not wrong, wrong


def _regen_tool():
    """``tools/regen_docs_outputs.py``, which reruns the code of the pages' printed outputs."""
    import importlib.util

    path = ROOT / "tools" / "regen_docs_outputs.py"
    spec = importlib.util.spec_from_file_location("regen_docs_outputs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGEN = _regen_tool()


def test_every_printed_output_is_regenerated_from_its_code():
    # A plain block after a lead-in that says the code "prints" it is one of the tool's.
    listed = set()
    for page, lead_in, _ in REGEN.OUTPUTS:
        text = (ROOT / page).read_text(encoding="utf-8")
        listed.add((page, REGEN.output_block(text, lead_in)[0]))
    unlisted = []
    for page in PAGES:
        text, name = page.read_text(encoding="utf-8"), str(page.relative_to(ROOT))
        for match in REGEN.FENCE.finditer(text):
            lead_in = text[: match.start()].rstrip().rsplit("\n\n", 1)[-1]
            if match.group(1) == "" and re.search(r"\bprints\b", lead_in):
                if (name, match.start(2)) not in listed:
                    unlisted.append(f"{name}: {' '.join(lead_in.split())[-80:]!r}")
    assert not unlisted, f"add these to tools/regen_docs_outputs.py's OUTPUTS: {unlisted}"


def test_regenerated_blocks_compare_timings_aside():
    shown = "  ND: test accuracy 0.911  (depth 3, 1,388 parameters, 26 epochs, 0.4 s)\n"
    assert REGEN.same(shown, shown.replace("0.4 s", "12.0 s") + "  \n")
    assert not REGEN.same(shown, shown.replace("26 epochs", "27 epochs"))
    # A rewritten block keeps the page's timings (measured on quiet cores) where it can.
    today = shown.replace("26 epochs, 0.4 s", "27 epochs, 16.7 s")
    assert REGEN.with_timings(today, shown) == shown.replace("26 epochs", "27 epochs")
    assert REGEN.with_timings(today, "no timing") == today
    text = "It prints:\n\n```python\nx\n```\n\n```\nold\n```\n"
    assert text[slice(*REGEN.output_block(text, "It prints"))] == "old\n"


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted({entry[0] for entry in REGEN.OUTPUTS}))
def test_pages_show_what_their_code_prints(page):
    stale = REGEN.stale_blocks([entry for entry in REGEN.OUTPUTS if entry[0] == page])
    assert not stale, "rerun python tools/regen_docs_outputs.py:\n\n" + "\n\n".join(stale)


@pytest.mark.slow
def test_readme_feature_pipeline_scores_as_the_classifier():
    """The README's feature pipeline, as printed, at least 0.87 in 5-fold CV on forest type,
    within the folds' noise of NDClassifier (docs/quickstart.md prints both; without the
    scaler, LogisticRegression's penalty flattens the indices and it scored 0.80)."""
    import ast

    from sklearn.model_selection import cross_val_score

    from sknd.datasets import load_forest_type

    (source,) = [s for _, s in python_blocks(ROOT / "README.md") if "make_pipeline(" in s]
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    (pipeline,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and "make_pipeline" in ast.unparse(node.value)
    ]
    namespace = {}
    exec(compile(ast.Module(imports, type_ignores=[]), "README.md", "exec"), namespace)
    model = eval(compile(ast.Expression(pipeline), "README.md", "eval"), namespace)
    X, y = load_forest_type(return_X_y=True, as_frame=True)
    assert cross_val_score(model, X, y, cv=5).mean() >= 0.87


@pytest.mark.slow
@pytest.mark.parametrize("image", [entry[0] for entry in REGEN.FIGURES])
def test_pages_show_the_figures_their_code_draws(image):
    stale = REGEN.stale_figures([entry for entry in REGEN.FIGURES if entry[0] == image])
    assert not stale, "rerun python tools/regen_docs_outputs.py: " + "; ".join(stale)


def test_every_image_of_the_pages_is_drawn_by_a_script():
    """No page embeds a committed image that no script redraws (it could disagree with the
    text beside it)."""
    drawn = {ROOT / entry[0] for entry in REGEN.FIGURES}
    embedded = {
        (page.parent / source).resolve()
        for page in PAGES
        for source in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    }
    assert embedded <= drawn, sorted(str(p.relative_to(ROOT)) for p in embedded - drawn)
    assert set((ROOT / "docs" / "images").glob("*.png")) == drawn


def test_figures_compare_as_images():
    pytest.importorskip("matplotlib")
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    def png(cells):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
        ax.imshow(cells, cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_title("k = 0.77")
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        plt.close(fig)
        return buffer.getvalue()

    cells = np.zeros((10, 10))
    changed = cells.copy()
    changed[3, 4] = 1.0  # one cell of a ratio matrix, red instead of white
    assert REGEN.same_image(png(cells), png(cells))
    assert not REGEN.same_image(png(cells), png(changed))
