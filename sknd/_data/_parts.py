"""A part of a fit's data as one value: its rows' bands, targets and sample weights.

A fit splits its rows into a training part and a validation part, the recipe's convex fits
learn other targets of the same rows, and the refit joins the two parts again. The three
arrays of a part always travel together, as a :class:`Part`, and the two parts of a fit
as a :class:`Split`.
"""

from typing import NamedTuple

import numpy as np

__all__ = ["Part", "Split"]


class Part(NamedTuple):
    """Rows of a fit's data: the training part, the validation part, or all rows.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_bands)
        The bands, or features computed from them (:meth:`with_features`).
    target : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        The encoded target (class codes, or regression targets), or what the recipe's
        convex fits learn from these rows (:meth:`with_target`).
    weight : ndarray of shape (n_rows,) or None
        Sample weights; None for unweighted rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd._data._parts import Part
    >>> part = Part(np.ones((4, 2)), np.array([0, 1, 0, 1]))
    >>> part.take([0, 1]).target
    array([0, 1])
    >>> part.joined(Part(np.ones((1, 2)), np.array([1]), np.array([2.0]))).weight
    array([1., 1., 1., 1., 2.])
    """

    X: np.ndarray
    target: np.ndarray
    weight: np.ndarray | None = None

    @property
    def n_rows(self):
        """The number of rows."""
        return len(self.X)

    def take(self, index):
        """The rows at ``index`` (an integer array or a list of positions)."""
        weight = None if self.weight is None else self.weight[index]
        return Part(self.X[index], self.target[index], weight)

    def with_target(self, target):
        """These rows with another target (one value per row)."""
        return self._replace(target=target)

    def with_features(self, features):
        """These rows with ``features`` (one row each, e.g. what a layer computes from
        their bands) in place of ``X``."""
        return self._replace(X=features)

    def joined(self, other):
        """This part's rows followed by ``other``'s.

        Unweighted where both are; where only one is weighted, the other's rows weigh 1
        each (an explicit validation set is not weighted).
        """
        weight = None
        if self.weight is not None or other.weight is not None:
            weight = np.concatenate([_weights(self), _weights(other)])
        return Part(
            np.concatenate([self.X, other.X]), np.concatenate([self.target, other.target]), weight
        )


class Split(NamedTuple):
    """A fit's training part and its validation part, which the recipe's steps read
    together (the convex start's path and the refinement select on the validation part).

    Attributes
    ----------
    train : Part
        The training rows.
    valid : Part or None
        The validation rows; None where the fit holds none out.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd._data._parts import Part, Split
    >>> Split(Part(np.ones((4, 2)), np.array([0, 1, 0, 1]))).valid is None
    True
    """

    train: Part
    valid: Part | None = None


def _weights(part):
    """``part``'s sample weights, ones where it is unweighted."""
    return np.ones(part.n_rows) if part.weight is None else part.weight
