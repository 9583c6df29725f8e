"""Every Python code block of README.md and docs/*.md runs as written.

Each page runs as one session, like a notebook: its blocks execute in order in one
namespace (a later block may use what an earlier block of the same page defined; a block
never relies on another page). Blocks of ``>>>`` lines run as doctests. Each page runs in a
temporary working directory, offline.
"""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


@pytest.mark.slow
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
