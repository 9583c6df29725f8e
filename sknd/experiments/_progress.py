"""Progress bar with the time left for long experiment runs (tqdm)."""

import sys

from tqdm.auto import tqdm


class Progress:
    """Count finished tasks on a tqdm bar: done / total, elapsed, estimated time left.

    Parameters
    ----------
    total : int
        Number of tasks.
    enabled : bool, default=True
        Print nothing when False.
    stream : file-like, default=None
        Where to write; None means ``sys.stderr``.
    """

    def __init__(self, total, *, enabled=True, stream=None):
        self.total = total
        self.done = 0
        self._bar = tqdm(
            total=total,
            disable=not enabled,
            file=sys.stderr if stream is None else stream,
            unit="fit",
            # tqdm's estimate is a moving average of the rate; tasks differ in cost but
            # the runner interleaves deep and shallow ones.
            # tqdm puts ", " before the postfix.
            bar_format="{n_fmt}/{total_fmt} fits |{bar:20}| {elapsed} elapsed, "
            "~{remaining} left{postfix}",
            dynamic_ncols=True,
        )

    def update(self, message=""):
        """Mark one task as finished and show ``message`` next to the counts."""
        self.done += 1
        self._bar.set_postfix_str(message, refresh=False)
        self._bar.update(1)

    def close(self):
        """End the bar (its last state stays on screen)."""
        self._bar.close()
