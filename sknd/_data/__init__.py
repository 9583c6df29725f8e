"""What the estimators take in and give out: bands checked, targets, weights.

Holds the checks of band values and clear errors for bad input (``_validation``), the
ND variant ``variant="auto"`` chooses from the training bands (``_variant``), the
targets encoded and the outputs decoded (``_tasks`` with torch; ``_decoding`` in numpy,
for model files too), and sample and class weights (``_weights``).

May import: numpy, pandas, torch, and :mod:`sknd.nn` (to recognise the layer in a
user's module); not the estimators, training or inference.
"""
