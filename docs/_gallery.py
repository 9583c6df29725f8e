"""Gallery hooks for docs/conf.py (importable by name, so Sphinx can cache the config)."""

import os
from pathlib import Path

# Where the examples write their files during the docs build: docs/_build (ignored by git,
# removed by `make docs-clean`), never the source tree. Relative to examples/, the working
# directory sphinx-gallery runs them in, so that the pages print no path of the build machine.
_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_RESULTS = Path(os.path.relpath(Path(__file__).resolve().parent / "_build" / "examples", _EXAMPLES))


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments each example runs with in the gallery.

    ``reproduce_paper.py`` runs its documented ``--quick`` mode on the smaller dataset:
    its full protocol takes far longer than a docs build. ``sentinel2_indices.py`` and
    ``landsat8_to_sentinel2.py`` write their files (PNG, GeoTIFF, COG, JSON) to
    ``docs/_build/examples`` (the gallery shows the figures anyway). The other examples take
    no arguments.
    """
    name = Path(script_vars["src_file"]).name
    if name == "reproduce_paper.py":
        return ["--quick", "--datasets", "forest_type", "--n-jobs", "1",
                "--output", str(_RESULTS / "reproduce_paper")]
    if name in ("sentinel2_indices.py", "landsat8_to_sentinel2.py"):  # out of the source tree
        return [str(_RESULTS / Path(name).stem)]
    return []
