"""The three estimators and the machinery they share.

``NDClassifier``, ``NDRegressor`` and ``NDTransformer`` (one module each) stand on
``_base.BaseND`` (parameters, input checks, the entry of fit and ``partial_fit``, inference,
pickling), the learned indices as features (``_learned_indices``) and exports
(``_export_methods``). A fit's machinery is apart from that API: ``_fit.Fit`` holds one fit's
state and its stages, with the validation split (``_fit_data``), the fitted attributes read
from the trained net (``_fitted_state``) and the all-or-nothing guard (``_fit_guards``).

May import every other part of sknd except the public modules that import the estimators
(``sknd.experiments``) and the package ``__init__``.
"""
