"""A dependency-free progress display for long experiment runs."""

import sys
import time


def _clock(seconds):
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class Progress:
    """Count finished tasks and print one status line per task to ``stream``.

    On a terminal the line is rewritten in place; in a log file (a background run) every
    update is a line of its own, so the log shows what finished when.

    Parameters
    ----------
    total : int
        Number of tasks.
    enabled : bool, default=True
        Print nothing when False.
    stream : file-like, default=None
        Where to write; None means ``sys.stderr`` at the time of writing.
    """

    def __init__(self, total, *, enabled=True, stream=None):
        self.total = total
        self.enabled = enabled
        self.stream = stream
        self.done = 0
        self.start = time.perf_counter()

    def _out(self):
        return sys.stderr if self.stream is None else self.stream

    def update(self, message=""):
        """Mark one task as finished and show ``message`` next to the counts."""
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        # A linear estimate: tasks differ in cost, but the runner interleaves them.
        left = elapsed / self.done * (self.total - self.done)
        width = len(str(self.total))
        line = (
            f"[{self.done:>{width}}/{self.total}] {_clock(elapsed)} elapsed, "
            f"~{_clock(left)} left | {message}"
        )
        out = self._out()
        if getattr(out, "isatty", lambda: False)():
            out.write("\r\033[K" + line)
            if self.done == self.total:
                out.write("\n")
        else:
            out.write(line + "\n")
        out.flush()
