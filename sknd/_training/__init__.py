"""Training an ND network: the default recipe and the training loop.

The recipe (``_recipe``) conditions the first block and starts the output layer from
convex fits (``_convex_start``), learns the indices (``_refinement``) on the rows and
their noisy copies (``_noise_models``), and for ``depth="auto"`` trains the wide head
(``_wide_head``). The loop is skorch's ``Net`` (``_net``), whose epochs run through the
hand-written step (``_fused``) with Adam on one buffer (``_adam``), or as CUDA graphs
(``_graph_epochs``), over tensor batches (``_batches``) and with sknd's own callbacks,
early stopping among them (``_callbacks``; ``_user_callbacks`` checks the user's).
What a fit needs in memory is checked before anything is built (``_memory``).

May import: :mod:`sknd._nd`, :mod:`sknd._data`, :mod:`sknd.networks` and
:mod:`sknd.nn`; not the estimators or inference.
"""
