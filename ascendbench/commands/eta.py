"""The time left of a long command's work (ETA), as its progress bar shows it (common.new_progress).

Kept apart from commands.common so that rich.progress is imported only when a bar is shown."""

from __future__ import annotations

import math

from rich.progress import ProgressColumn, Task
from rich.text import Text

# Task fields that show_progress keeps (common.show_progress): where the current stretch of work began, as
# (task.elapsed in seconds, units done), and when a time limit ends it (task.elapsed in seconds, or None)
FROM = "eta_from"
DEADLINE = "eta_deadline"


def seconds_left(from_s: float, from_done: float, now_s: float, done: float, total: float,
                 deadline_s: float | None = None) -> float | None:
    """Seconds until `total` units are done, at the mean rate since the stretch began (`from_done` units done
    at `from_s`; `done` at `now_s`), or until `deadline_s` when that comes first (a --timeout). None when
    neither is known yet (no unit done since the stretch began, and no deadline). Times in seconds on one
    clock; units any count (trials, shapes, elements)."""
    left = []
    if done > from_done and now_s > from_s:
        left.append(max(0.0, total - done) * (now_s - from_s) / (done - from_done))
    if deadline_s is not None:
        left.append(max(0.0, deadline_s - now_s))
    return min(left) if left else None


def clock(seconds: float) -> str:
    """h:mm:ss, as rich's elapsed column writes it; rounded up, so that work still running never shows 0:00:00
    left."""
    minutes, secs = divmod(math.ceil(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


class EtaColumn(ProgressColumn):
    """"ETA h:mm:ss", the time left of a task whose amount of work is known (seconds_left from the task's
    FROM and DEADLINE fields); "ETA -:--:--" until a rate or deadline is known; blank where the amount is not
    known (total None) or the task is finished, so that the elapsed column stands alone there."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.finished or task.elapsed is None:
            return Text("")
        from_s, from_done = task.fields.get(FROM, (0.0, 0.0))
        left = seconds_left(from_s, from_done, task.elapsed, task.completed, task.total, task.fields.get(DEADLINE))
        return Text(f"ETA {'-:--:--' if left is None else clock(left)}", style="progress.remaining")
