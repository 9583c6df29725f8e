"""Where the scene command writes its map: the output name checked before anything is read.

The output is refused when it is any file the run reads (the model, the
scene, every file the scene references), when it is not a GeoTIFF name, or
when its folder does not exist. The map itself is staged beside the output
(:class:`sknd.raster._geotiff.StagedMap`).
"""

import os

__all__ = []

#: The names of the files the command writes: GeoTIFFs (a name without a suffix too).
GEOTIFF_SUFFIXES = (".tif", ".tiff")


def check_output(output, inputs):
    """Refuse an output the command cannot write as asked, before anything is read.

    ``inputs`` maps what each input is (``"scene"``) to its path: the output is
    none of them, or writing the map would destroy it.
    """
    for what, path in inputs.items():
        if _same_file(output, path):
            raise ValueError(
                f"the output {output!r} is the {what} file: the map would replace it. Name "
                "another output file."
            )
    suffix = os.path.splitext(output)[1]
    if suffix and suffix.lower() not in GEOTIFF_SUFFIXES:
        stem = os.path.splitext(os.path.basename(output))[0]
        raise ValueError(
            f"{output!r} asks for a {suffix} file, and the command writes GeoTIFFs: name the "
            f"output {stem}.tif (convert it afterwards if need be, e.g. gdal_translate -of "
            f"PNG {stem}.tif {stem}{suffix})."
        )
    if os.path.isdir(output):
        raise ValueError(f"cannot write {output!r}: it is a directory.")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise ValueError(f"cannot write {output!r}: there is no folder {folder!r}.")


def _same_file(output, path):
    if os.path.realpath(output) == os.path.realpath(path):
        return True
    try:
        return os.path.samefile(output, path)  # hard links
    except OSError:  # either does not exist
        return False
