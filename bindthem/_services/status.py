"""A one-line status for long builds.

A compile that runs longer than ``AFTER`` seconds says so: in a Jupyter
kernel as a display that updates in place, on a terminal (stderr is a tty)
as a line rewritten with ``\\r``; the line ends with the total time. Anywhere
else (scripts with redirected output, CI, subprocesses) nothing is printed.
"""

import subprocess
import sys
import threading
import time

__all__ = ["run", "run_all"]

AFTER = 1.0   # seconds a build runs silently
POLL = 0.25   # seconds between looks at the clock


def _kernel_shell():
    """The IPython shell of a Jupyter kernel we run in, or None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
    except Exception:
        return None
    return shell if getattr(shell, "kernel", None) is not None else None


def _isatty(stream):
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Status:
    def __init__(self, what):
        self.what = what
        self.start = time.monotonic()
        self.sink = None      # "notebook", "terminal" or "" once decided
        self.handle = None    # the notebook display
        self.shown = None     # the text shown last

    def _show(self, text, final=False):
        if self.sink == "notebook":
            if self.handle is None:
                from IPython.display import display
                self.handle = display({"text/plain": text}, raw=True, display_id=True)
            else:
                self.handle.update({"text/plain": text}, raw=True)
        elif self.sink == "terminal":
            sys.stderr.write("\r\x1b[K" + text + ("\n" if final else ""))
            sys.stderr.flush()
        self.shown = text

    def tick(self):
        elapsed = time.monotonic() - self.start
        if elapsed < AFTER:
            return
        if self.sink is None:
            self.sink = ("notebook" if _kernel_shell() is not None
                         else "terminal" if _isatty(sys.stderr) else "")
        text = "bindthem: %s ... %d s" % (self.what, elapsed)
        if self.sink and text != self.shown:
            self._show(text)

    def done(self, ok):
        if self.sink:
            self._show("bindthem: %s: %s after %.1f s" % (
                self.what, "done" if ok else "failed", time.monotonic() - self.start),
                final=True)


def run(cmd, what):
    """``subprocess.run(cmd, capture_output=True, text=True)`` that shows a
    status line (``what``, elapsed time) once it has run for ``AFTER`` s in an
    interactive session. The process is killed if the wait is interrupted."""
    return run_all([cmd], what)[0]


def run_all(cmds, what):
    """:func:`run` for several commands at once, run in parallel under one
    status line: their CompletedProcess, in order. All are killed if the
    wait is interrupted."""
    status = _Status(what)
    procs, results, readers = [], [None] * len(cmds), []
    try:
        for cmd in cmds:
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        for i, proc in enumerate(procs):  # a reader each: no pipe fills while another waits
            t = threading.Thread(target=_collect, args=(proc, results, i), daemon=True)
            t.start()
            readers.append(t)
        for t in readers:
            while t.is_alive():
                t.join(POLL)
                status.tick()
    except BaseException:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
        status.done(False)
        raise
    status.done(all(r.returncode == 0 for r in results))
    return results


def _collect(proc, results, i):
    out, err = proc.communicate()
    results[i] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
