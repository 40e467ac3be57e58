"""A one-line status for long builds.

A compile that runs longer than ``AFTER`` seconds says so, with how far it is
(the translation units done, of a build split into several): in a Jupyter
kernel as a display that updates in place, on a terminal (stderr is a tty)
as a line rewritten with ``\\r``; the line ends with the total time. Anywhere
else (scripts with redirected output, CI, subprocesses, pip) it goes to the
``logging`` logger ``"bindthem"`` at INFO, once when it has run ``AFTER``
seconds and once when it ends: silent unless the program configures logging
(``logging.basicConfig(level=logging.INFO)``). ``BINDTHEM_PROGRESS`` (read
at each build) chooses: ``0`` nothing at all, ``1`` those two lines on stderr
wherever it goes (a wheel build under ``pip -v``, a CI log), unset or
anything else the above.
"""

import logging
import os
import subprocess
import sys
import threading
import time

__all__ = ["run", "run_all"]

AFTER = 1.0   # seconds a build runs silently
POLL = 0.25   # seconds between looks at the clock
ENV = "BINDTHEM_PROGRESS"
log = logging.getLogger("bindthem")


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


def _sink():
    """Where a long build's status goes: "notebook", "terminal", "lines"
    (stderr, a line at the start and one at the end), "log" or ""."""
    choice = os.environ.get(ENV, "").strip()
    if choice == "0":
        return ""
    if choice == "1":
        return "lines"
    if _kernel_shell() is not None:
        return "notebook"
    return "terminal" if _isatty(sys.stderr) else "log"


class _Status:
    def __init__(self, what, total=1):
        self.what = what
        self.total = total    # commands run under this status (a build's units)
        self.finished = 0
        self.start = time.monotonic()
        self.sink = None      # _sink()'s answer once decided
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
        elif self.shown is None or final:  # a line at the start, one at the end
            if self.sink == "lines":
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
            elif self.sink == "log":
                log.info("%s", text)
        self.shown = text

    def _far(self):
        if self.total < 2:
            return ""
        return " (%d of %d units done)" % (self.finished, self.total)

    def tick(self):
        elapsed = time.monotonic() - self.start
        if elapsed < AFTER:
            return
        if self.sink is None:
            self.sink = _sink()
        text = "bindthem: %s ... %d s%s" % (self.what, elapsed, self._far())
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
    status = _Status(what, len(cmds))
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
                status.finished = sum(r is not None for r in results)
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
