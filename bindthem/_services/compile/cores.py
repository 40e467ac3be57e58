"""How many compiler processes a cold build runs when ``jobs`` is not given:
the cores this process may use that other work leaves idle now.

A split build (units.py) pays for its parallel units with extra work: each
unit reads the header again, and the units are linked. That pays only where
each unit gets a core of its own. On a machine whose cores are busy with
other work, the units share the core that one unit would have had, and the
split build is slower than one unit. So the default counts the idle cores:

- the usable cores: the process's CPU affinity, capped by its cgroup's CPU
  quota (a container given ``--cpus=2`` on a larger machine);
- less the cores the rest of the machine kept busy over the last window,
  from ``/proc/stat`` (every usable CPU's busy and idle ticks), this
  process's own CPU time and its finished compilers' taken out. The window
  runs from this process's previous probe, when that was at most
  :data:`WINDOW_MAX` seconds ago (a build of several headers in a row: the
  previous header's build), or else over :data:`PROBE` seconds slept;
- a core counts when at least :data:`IDLE_SHARE` of it was idle, and the
  count is at least 1.

Without ``/proc/stat`` (macOS), the one-minute load average stands for the
busy cores; without that either, every usable core counts.
"""

from __future__ import annotations

import math
import os
import threading
from time import monotonic, sleep

PROBE = 0.1  # seconds slept to measure the first window (/proc/stat counts 100 ticks a second)
WINDOW_MAX = 30.0  # seconds: an older previous probe does not say what is idle now
IDLE_SHARE = 0.75  # of a core that must have been idle for it to count
STAT = "/proc/stat"

_lock = threading.Lock()
_last = None  # the previous probe's sample (_sample)


def _affinity():
    """The CPUs this process may run on (their numbers)."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform (macOS)
        return frozenset(range(os.cpu_count() or 1))


def _quota(root="/sys/fs/cgroup", own="/proc/self/cgroup"):
    """The cores the CPU quota of this process's cgroup (v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``) allows, or None where none is set or readable."""
    try:
        with open(own) as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
        for _, ctrl, path in lines:
            if ctrl == "":  # v2: "quota period" or "max period"
                name = os.path.join(root, path.lstrip("/"), "cpu.max")
                if os.path.exists(name):
                    with open(name) as f:
                        quota, period = f.read().split()[:2]
                    return None if quota == "max" else int(quota) / int(period)
            elif "cpu" in ctrl.split(","):  # v1: -1 for none
                base = os.path.join(root, ctrl, path.lstrip("/"))
                with open(os.path.join(base, "cpu.cfs_quota_us")) as f:
                    quota = int(f.read())
                with open(os.path.join(base, "cpu.cfs_period_us")) as f:
                    return None if quota < 0 else quota / int(f.read())
    except (OSError, ValueError):
        pass
    return None


def usable_cores():
    """The cores this process may use: its affinity, capped by its cgroup's
    CPU quota (rounded up)."""
    cpus = len(_affinity())
    quota = _quota()
    return cpus if quota is None else max(1, min(cpus, math.ceil(quota)))


def _ticks(cpus):
    """{cpu: (idle ticks, all ticks)} since boot of the CPUs ``cpus``, from
    /proc/stat (idle: idle and iowait; all: user to steal), or None."""
    found = {}
    try:
        with open(STAT) as f:
            for line in f:
                name, _, rest = line.partition(" ")
                if not name.startswith("cpu"):
                    break  # the per-CPU lines come first
                if name != "cpu" and int(name[3:]) in cpus:
                    t = [int(x) for x in rest.split()[:8]]
                    found[int(name[3:])] = (t[3] + t[4], sum(t))
    except (OSError, ValueError, IndexError):
        return None
    return found if set(found) == set(cpus) else None


def _own_seconds():
    """CPU seconds of this process and of its children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _sample(cpus):
    return monotonic(), _ticks(cpus), _own_seconds()


def _idle_between(before, after):
    """The cores that the work of others left idle between two samples."""
    (t0, a, own0), (t1, b, own1) = before, after
    idle = sum(b[c][0] - a[c][0] for c in b)
    total = sum(b[c][1] - a[c][1] for c in b)
    if total <= 0 or t1 <= t0:
        return float(len(b))
    busy = (total - idle) / (total / len(b))  # in cores
    return len(b) - max(0.0, busy - (own1 - own0) / (t1 - t0))


def idle_cores():
    """The usable CPUs that other work left idle over the last window (the
    module's docstring), a float; None without /proc/stat."""
    global _last
    cpus = _affinity()
    with _lock:
        now = _sample(cpus)
        if now[1] is None:
            return None
        before = _last
        if (before is None or set(before[1]) != set(now[1])
                or not PROBE <= now[0] - before[0] <= WINDOW_MAX):
            sleep(PROBE)
            before, now = now, _sample(cpus)
            if now[1] is None:
                return None
        _last = now
    return _idle_between(before, now)


def default_jobs():
    """The compiler processes a cold build runs when ``jobs`` is not given:
    the usable cores that other work leaves idle now, at least 1 (the
    module's docstring)."""
    usable = usable_cores()
    if usable < 2:
        return 1
    idle = idle_cores()
    if idle is None:
        try:
            idle = usable - os.getloadavg()[0]
        except (AttributeError, OSError):
            return usable
    return max(1, min(usable, math.floor(idle + 1 - IDLE_SHARE)))
