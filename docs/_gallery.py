"""Gallery hooks for docs/conf.py (importable by name, so Sphinx can cache the config)."""

import tempfile
from pathlib import Path

# Where reproduce_paper.py writes its report during the docs build (not the source tree).
_RESULTS = Path(tempfile.gettempdir()) / "sknd-docs-results"


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments each example runs with in the gallery.

    ``reproduce_paper.py`` runs its documented ``--quick`` mode on the smaller dataset:
    its full protocol takes far longer than a docs build. ``sentinel2_indices.py`` and
    ``landsat8_to_sentinel2.py`` write their files (PNG, GeoTIFF, COG, JSON) to a temporary
    directory (the gallery shows the figures anyway). The other examples take no arguments.
    """
    name = Path(script_vars["src_file"]).name
    if name == "reproduce_paper.py":
        return ["--quick", "--datasets", "forest_type", "--n-jobs", "1",
                "--output", str(_RESULTS / "reproduce_paper")]
    if name in ("sentinel2_indices.py", "landsat8_to_sentinel2.py"):  # out of the source tree
        return [str(_RESULTS / Path(name).stem)]
    return []
