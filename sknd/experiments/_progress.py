"""Progress bar with the time left for long experiment runs (tqdm)."""

import sys
import time

from tqdm.auto import tqdm

# tqdm puts ", " before the postfix.
_FORMAT = "{n_fmt}/{total_fmt} fits |{bar:20}| {elapsed} elapsed, ~{remaining} left{postfix}"


class Progress:
    """Count finished tasks: done / total, elapsed time, estimated time left, last result.

    On a terminal this is a tqdm bar rewritten in place; in a log file (a background run)
    every update is a line of its own in the same format, so the log shows what finished
    when.

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
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.start = time.perf_counter()
        self.lines = enabled and not getattr(self.stream, "isatty", lambda: False)()
        self._bar = tqdm(
            total=total,
            disable=not enabled or self.lines,
            file=self.stream,
            unit="fit",
            bar_format=_FORMAT,
            dynamic_ncols=True,
        )

    def update(self, message=""):
        """Mark one task as finished and show ``message`` next to the counts."""
        self.done += 1
        if self.lines:
            line = tqdm.format_meter(
                self.done,
                self.total,
                time.perf_counter() - self.start,
                bar_format=_FORMAT,
                postfix=message,
                ncols=100,
            )
            self.stream.write(line + "\n")
            self.stream.flush()
            return
        self._bar.set_postfix_str(message, refresh=False)
        self._bar.update(1)

    def close(self):
        """End the bar (its last state stays on screen)."""
        self._bar.close()
