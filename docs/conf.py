"""Sphinx configuration of the sknd documentation (``make docs`` from the repository root)."""

import importlib
import re
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _gallery.py

os.environ.setdefault("MPLBACKEND", "Agg")
import sknd  # noqa: E402

project = "sknd"
author = "The sknd developers"
copyright = "2025-2026, The sknd developers"
release = sknd.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax copied into the site (_static/mathjax): no CDN needed
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
templates_path = ["_templates"]

# MyST: $...$ / $$...$$ math and ::: fences in the Markdown pages.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

# ---- API reference ----------------------------------------------------------------------------
# One page per public module, listing every name in its ``__all__`` (so a new public object
# shows up without editing the docs); autosummary writes one page per function and class.
PUBLIC_MODULES = [
    "sknd", "sknd.nn", "sknd.networks", "sknd.raster", "sknd.inspection", "sknd.plotting",
    "sknd.bands", "sknd.indices", "sknd.datasets", "sknd.experiments", "sknd.onnx",
]


def _write_api_pages():
    api = HERE / "api"
    api.mkdir(exist_ok=True)
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        routines, constants = [], []
        for member in module.__all__:
            if member == "__version__":
                continue
            obj = getattr(module, member)
            (routines if callable(obj) else constants).append(member)
        lines = [name, "=" * len(name), "", f".. automodule:: {name}", "   :no-members:",
                 "   :no-index:", "", f".. currentmodule:: {name}", ""]
        if routines:
            lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
            lines += [f"   {member}" for member in routines] + [""]
        if constants:
            lines += ["Constants", "---------", ""]
            for member in constants:
                lines += [f".. autodata:: {member}", "   :no-value:", ""]
        text = "\n".join(lines)
        page = api / f"{name}.rst"
        if not page.exists() or page.read_text() != text:  # keep incremental builds quiet
            page.write_text(text)


_write_api_pages()

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_member_order = "groupwise"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Types as cross-references: also keeps "shape (n_features_in_,)" from reading as a link target.
numpydoc_xref_param_type = True
numpydoc_xref_ignore = {"of", "shape", "default", "or", "optional", "like", "and", "fitted",
                        "estimator", "any", "n_samples", "n_features"}
# No intersphinx (the build runs offline): keep numpydoc's aliases from pointing at
# python:/numpy: glossary terms that cannot resolve here.
from numpydoc.xref import DEFAULT_LINKS  # noqa: E402

numpydoc_xref_aliases = {name: name for name in DEFAULT_LINKS}


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document the methods sknd defines, not those inherited from scikit-learn or torch."""
    if what != "class" or skip:
        return None
    function = getattr(obj, "__func__", obj)
    module = getattr(function, "__module__", None)
    if module is None and isinstance(obj, property):
        module = getattr(obj.fget, "__module__", None)
    if module is not None and not module.startswith("sknd"):
        return True
    return None


_TRAILING_UNDERSCORE = re.compile(r"(?<![`\w\\])([A-Za-z]\w*)_(?=[,)])")


def _escape_fitted_names(app, what, name, obj, options, lines):
    """``shape (n_features_in_,)`` in numpydoc types: a plain ``name_`` is an rst link."""
    lines[:] = [_TRAILING_UNDERSCORE.sub(r"\1\\_", line) for line in lines]


_VIEWCODE_BACK = re.compile(r'(class="viewcode-back" href="[^"#]*/([\w.]+)\.html)#[\w.]+\.(\w+)"')


def _fix_viewcode_anchors(app, pagename, templatename, context, doctree):
    """Point the "[docs]" links of the highlighted sources at the objects' own anchors.

    viewcode names a source module's objects after the first public module that documented
    one of them (``sknd._nd._pairs``: ``sknd.bands`` for ``band_pair_indices``), so the link
    of ``all_pairs``, documented under ``sknd.nn``, pointed at ``#sknd.bands.all_pairs``.
    An autosummary page's anchor is its own name, ``sknd.nn.all_pairs``.
    """
    if pagename.startswith("_modules/") and "body" in context:
        context["body"] = _VIEWCODE_BACK.sub(
            lambda m: f'{m[1]}#{m[2]}"' if m[2].rsplit(".", 1)[-1] == m[3] else m[0],
            context["body"],
        )


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("autodoc-process-docstring", _escape_fitted_names, priority=600)
    app.connect("html-page-context", _fix_viewcode_anchors)

# ---- gallery ----------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # execute every example
    "ignore_pattern": r"__init__\.py",
    "reset_argv": "_gallery.reset_argv",
    "abort_on_example_error": True,
    "doc_module": ("sknd",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"sknd": None},
    "download_all_examples": False,
    "min_reported_time": 1,
    "show_signature": False,
}

# ---- HTML -------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sknd {release}"
# Pages of the top bar without sub-pages: no primary sidebar (the theme would show an empty
# "Section Navigation" column beside them).
html_sidebars = {page: [] for page in ("install", "quickstart", "math", "architecture", "changelog")}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    # Every top-level page in the header (the theme's default of 5 hid the API reference,
    # the examples and the changelog under "More").
    "header_links_before_dropdown": 8,
    # The search as an icon (Ctrl+K), the links beside the title: one line at 1400 px.
    "navbar_align": "left",
    "navbar_persistent": [],
    "navbar_end": ["search-button", "theme-switcher", "navbar-icon-links"],
}
# Tables, code and gallery figures within the article column.
html_css_files = ["sknd.css"]
# _static/mathjax/LICENSE: MathJax's license (Apache-2.0, from MathJax 3.2.2, the version
# sphinx-mathjax-offline copies next to it), which its wheel does not ship.
html_static_path = ["_static"]
