"""Where the scene command writes its map: the output name checked, the map staged beside it.

The map is written to a temporary GeoTIFF next to the target (the same file
system, so that the rename is atomic), copied to a COG there with ``--cog``,
given its category names, and only then renamed over the target, side-car
last. A run that fails, is refused or is stopped leaves the target (and a map
an earlier run left there) as it was, and no temporary file.
"""

import os

from ._geotiff import (
    remove_quietly,
    sidecar,
    temporary_path,
    write_category_names,
    write_cog,
)

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


class StagedMap:
    """A map written to a temporary file beside ``output`` and renamed over it when complete.

    Use it as a context manager: whatever happens, no temporary file is left.
    """

    def __init__(self, output, *, cog):
        self.output = output
        self.cog = cog
        self.temporaries = [temporary_path(output)]

    def __enter__(self):
        return self

    @property
    def path(self):
        """The temporary file the map is written to."""
        return self.temporaries[0]

    def __exit__(self, *exc_info):
        for path in self.temporaries:
            remove_quietly(path, sidecar(path))

    def open(self, rasterio, profile):
        """The temporary GeoTIFF, open for writing (GDAL creates it with the umask's mode)."""
        return rasterio.open(self.path, "w", **profile)

    def commit(self, *, labels, compress, before_replace):
        """Finish the map (COG, category names ``labels``) and rename it over the output.

        ``before_replace`` is called just before: it raises to stop the run.
        """
        source = self.path
        if self.cog:
            copy = temporary_path(self.output)
            self.temporaries.append(copy)
            write_cog(source, copy, categorical=labels is not None, compress=compress)
            source = copy
        if labels is not None:
            write_category_names(source, labels)
        before_replace()
        os.replace(source, self.output)
        if os.path.exists(sidecar(source)):
            os.replace(sidecar(source), sidecar(self.output))
        else:  # a side-car left by an earlier map would rename this one's classes
            remove_quietly(sidecar(self.output))
