"""The three estimators and the machinery they share.

``NDClassifier``, ``NDRegressor`` and ``NDTransformer`` (one module each) stand on
``_base.BaseND`` (parameters, input checks, inference, pickling) and its mixins: fitting
(``_fitting``, with ``_fit_data``, ``_fit_guards`` and ``_fitted_state``), the learned
indices as features (``_learned_indices``) and exports (``_export_methods``).

May import every other part of sknd except the public modules that import the estimators
(``sknd.experiments``) and the package ``__init__``.
"""
