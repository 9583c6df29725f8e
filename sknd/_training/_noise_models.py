"""The two band-noise models, written once: the paper's multiplicative ``b + eta |b| z`` and
additive sensor noise ``b + eta s z``.

Used by the default recipe, whose classifiers also train on noisy copies of the rows
(:func:`sknd._training._refinement.noisy_copy`), and by the experiments' robustness analysis
(:func:`sknd.experiments.add_multiplicative_noise`, :func:`~sknd.experiments.add_additive_noise`).
numpy only: training does not import the experiments.
"""

import numpy as np

__all__ = []


def perturbed(values, level, z, kind, scale=None):
    """``values`` under standard normal draws ``z`` of noise ``kind`` at ``level``.

    ``"multiplicative"``: ``b + level |b| z``. ``"additive"``: ``b + level scale z``
    (``scale`` one value per band), clipped at 0 where every value is non-negative, as a
    sensor's would be.

    >>> perturbed(np.array([[2.0, 0.0]]), 0.1, np.ones((1, 2)), "multiplicative")
    array([[2.2, 0. ]])
    """
    if kind == "multiplicative":
        return values + level * np.abs(values) * z
    return sensor_range(values, values + level * scale * z)


def sensor_range(values, noisy):
    """``noisy`` clipped at 0 where every one of ``values`` is non-negative, as a sensor's
    bands would be; unchanged for signed ``values``.

    >>> sensor_range(np.array([1.0, 2.0]), np.array([-0.5, 2.5]))
    array([0. , 2.5])
    """
    return np.clip(noisy, 0.0, None) if (values >= 0).all() else noisy
