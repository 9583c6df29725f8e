"""The Awesome Spectral Indices vocabulary of :func:`sknd.inspection.export_asi`.

Band symbols (``"N"`` for nir), platform names and application domains of the
catalogue (``spectral-indices-dict.json``, which spyndex loads), for writing
learned indices as its entries.
"""

from __future__ import annotations

from ..bands import get_sensor
from ..indices import SPYNDEX_BANDS

__all__ = ["asi_domain", "asi_platforms", "asi_symbol"]

# sknd common name -> Awesome Spectral Indices band symbol ("nir" -> "N").
_ASI_SYMBOLS = {common: symbol for symbol, common in SPYNDEX_BANDS.items()}

# sknd sensor presets -> the platform names of the Awesome Spectral Indices catalogue.
_ASI_PLATFORMS = {
    "sentinel2": "Sentinel-2",
    "landsat8": "Landsat-OLI",
    "landsat7": "Landsat-ETM+",
    "landsat5": "Landsat-TM",
    "modis": "MODIS",
    "planetscope": "PlanetScope",
}


def asi_symbol(band):
    """The Awesome Spectral Indices symbol of ``band`` (``"N"`` for nir)."""
    symbol = _ASI_SYMBOLS.get(band.common_name)
    if symbol is None:
        what = "no common name" if band.common_name is None else f"common name {band.common_name!r}"
        raise ValueError(
            f"Band {band.name!r} ({what}) has no Awesome Spectral Indices symbol; symbols "
            f"exist for {', '.join(sorted(_ASI_SYMBOLS))}."
        )
    return symbol


def asi_domain(known, catalogue):
    """The application domain of the classic index a band pair forms, else ``""``."""
    first = known.split(", ")[0].lstrip("-")
    match = [entry.domain for entry in catalogue if entry.name == first]
    return match[0] if match else ""


def asi_platforms(band_i, band_j):
    """The catalogue's platforms whose sensors have both bands' common names."""
    commons = {band_i.common_name, band_j.common_name}
    return [
        name
        for key, name in _ASI_PLATFORMS.items()
        if commons <= {common for _, common, _ in get_sensor(key).bands}
    ]
