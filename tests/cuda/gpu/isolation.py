"""Every test of the device check in a process of its own, with a wall limit.

A pytest plugin: run_gpu_check.sh loads it with ``-p isolation`` (so that it
acts there only, never in the whole suite). Each collected test is replaced
by an item that runs that one test in a fresh ``python -m pytest NODEID``
(the child) and raises what the child reported: passed, failed (the child's
traceback), skipped (its reason, so that summarize.py can judge it). A child
that runs past its limit is HUNG: its native stacks are taken (gdb, else
cuda-gdb, with a short limit) into stacks.log, then its Python stacks
(faulthandler on SIGUSR1, which needs no GIL), then its whole process group
is killed, and the test fails saying so; the next test runs. A child that
dies without reporting (a signal, an abort) is one failure, CRASHED. A
call blocked in C holding the GIL, which pytest-timeout cannot interrupt,
costs its own test only.

Limits: ``@pytest.mark.isolated(limit=S)`` on a test (or its module's
``pytestmark``), else $BINDTHEM_GPU_TEST_LIMIT (default 30 s); each cut to
what is left before $BINDTHEM_GPU_DEADLINE (seconds since the epoch, set by
run_gpu_check.sh from its budget). A test that would start with less than
MIN_START s left is not started: it fails, "not run: the check's budget is
spent", so a budget overrun can never pass. The tests collected are written
to $BINDTHEM_GPU_BUILD/expected.json, so that summarize.py can tell a test
that never ran.

Also ``run_limited()`` (any command with a limit and stacks on a hang),
used by probe_hangs.py and test_gpu_findings.py, and ``native_stacks()``.
"""

import faulthandler
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

LIMIT = float(os.environ.get("BINDTHEM_GPU_TEST_LIMIT", "30"))
STACKS_LIMIT = 10  # seconds for gdb to attach and print every thread's stack
MIN_START = 3  # a test is not started with less time than this left
RESULT_ENV = "BINDTHEM_ISOLATED_RESULT"  # set in a child: where it writes its reports
STACKS_ENV = "BINDTHEM_ISOLATED_STACKS"  # set in a child: where SIGUSR1 dumps its stacks
DEADLINE_ENV = "BINDTHEM_GPU_DEADLINE"


def _log_dirs():
    return [d for d in (os.environ.get("BINDTHEM_GPU_BUILD"), os.environ.get("OUT"))
            if d and os.path.isdir(d)]


def log_append(name, text):
    """Appends text to NAME in $BINDTHEM_GPU_BUILD and $OUT (where set)."""
    for d in _log_dirs():
        with open(os.path.join(d, name), "a") as f:
            f.write(text)


def stacks_digest(stacks, frames=8):
    """The first `frames` frames of each thread in gdb's `thread apply all
    bt` output (the whole of it goes to stacks.log)."""
    out, n = [], 0
    for line in stacks.splitlines():
        if line.startswith("Thread "):
            out.append(line)
            n = 0
        elif line.startswith("#") and n < frames:
            out.append("  " + line[:200])
            n += 1
    return "\n".join(out) if out else stacks[:2000]


def native_stacks(pid, limit=STACKS_LIMIT):
    """Every thread's native stack of process pid: gdb, else cuda-gdb (the
    device image has only that), at most `limit` s."""
    for name in ("gdb", "cuda-gdb"):
        path = shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin")
        if not path:
            continue
        cmd = [path, "-nx", "-p", str(pid), "-batch", "-ex", "set pagination off",
               "-ex", "thread apply all bt 30"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "(%s -p %d ran past %d s: no native stacks)" % (name, pid, limit)
        return "(%s)\n%s%s" % (name, r.stdout[-20000:], r.stderr[-2000:])
    return "(no gdb or cuda-gdb here: no native stacks)"


class Finished:
    """What run_limited() saw: rc (None when hung), output, hung, took, stacks."""

    def __init__(self, rc, output, hung, took, stacks):
        self.rc, self.output, self.hung, self.took, self.stacks = rc, output, hung, took, stacks


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_RUNNER_FRAMES = ("/_pytest/", "/pluggy/", "<frozen runpy>", "/pytest/__main__.py")


def run_limited(argv, limit, name, env=None, cwd=None, python_stacks=None):
    """Runs argv in a session of its own, its output into a file. Past
    `limit` s it is HUNG: native stacks (into stacks.log, headed by name),
    then SIGUSR1 (faulthandler's Python stacks, into its output or into
    python_stacks, a file), then the whole group is killed."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+", errors="replace") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        stacks = ""
        try:
            rc = p.wait(timeout=max(limit, 0.1))
        except subprocess.TimeoutExpired:
            rc = None
            stacks = native_stacks(p.pid)
            try:
                os.kill(p.pid, signal.SIGUSR1)
                p.wait(timeout=1)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        took = time.monotonic() - start
        _kill_group(p)  # also what the command left behind
        p.wait()
        out.seek(0)
        output = out.read()
    if python_stacks and os.path.exists(python_stacks):
        with open(python_stacks, errors="replace") as f:
            frames = [ln for ln in f if not any(k in ln for k in _RUNNER_FRAMES)]
        if frames:
            output += ("\n---- Python stacks (faulthandler, SIGUSR1; pytest's frames left "
                       "out) ----\n")
            output += "".join(frames)
    if rc is None:
        log_append("stacks.log", "==== %s: HUNG, past its limit of %.0f s; native stacks:\n%s\n"
                   "---- its output, last 4000 characters:\n%s\n\n"
                   % (name, limit, stacks, output[-4000:]))
    return Finished(rc, output, rc is None, took, stacks)


# ---- the child: one test, its reports into $BINDTHEM_ISOLATED_RESULT ----

_REPORTS = []


def _child_report(report):
    entry = {"when": report.when, "outcome": report.outcome, "text": report.longreprtext}
    if report.failed:
        for title, content in report.sections:
            entry["text"] += "\n---- %s ----\n%s" % (title, content)
    if report.skipped:
        entry["reason"] = (report.longrepr[2] if isinstance(report.longrepr, tuple)
                           else report.longreprtext)
        if entry["reason"].startswith("Skipped: "):
            entry["reason"] = entry["reason"][len("Skipped: "):]
        if hasattr(report, "wasxfail"):
            entry["outcome"] = "xfailed"
    _REPORTS.append(entry)
    tmp = os.environ[RESULT_ENV] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_REPORTS, f)
    os.replace(tmp, os.environ[RESULT_ENV])


# ---- the parent: each test replaced by an IsolatedTest ----

class IsolatedTest(pytest.Item):
    """One collected test, run in a child process by its node id."""

    def __init__(self, *, original, **kw):
        super().__init__(**kw)
        self.original = original
        self.own_markers.extend(original.own_markers)
        self.keywords.update(original.keywords)

    def reportinfo(self):
        return self.original.reportinfo()

    def _limit(self):
        mark = self.get_closest_marker("isolated")
        limit = float(mark.kwargs.get("limit", LIMIT)) if mark else LIMIT
        deadline = os.environ.get(DEADLINE_ENV)
        if deadline:
            # kept: the stacks' time and the kill
            left = float(deadline) - time.time() - STACKS_LIMIT - 2
            if left < MIN_START:
                pytest.fail("not run: the check's budget is spent (%.0f s left before its "
                            "deadline)" % (float(deadline) - time.time()), pytrace=False)
            limit = min(limit, left)
        return limit

    def runtest(self):
        limit = self._limit()
        tmp = tempfile.mkdtemp(prefix="isolated-")
        result, pystacks = os.path.join(tmp, "result.json"), os.path.join(tmp, "stacks.txt")
        env = dict(os.environ, **{RESULT_ENV: result, STACKS_ENV: pystacks,
                                  "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONUNBUFFERED": "1"})
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "isolation",
                "-q", "--no-header", "-o", "addopts=", "-o", "faulthandler_timeout=0",
                self.nodeid]
        try:
            done = run_limited(argv, limit, self.nodeid, env=env, cwd=str(self.config.rootpath),
                               python_stacks=pystacks)
            reports = _reports(result)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _raise_outcome(self.nodeid, done, reports, limit)


def _reports(path):
    """The child's reports; [] when it wrote none (or half of its file)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        return []


def _raise_outcome(nodeid, done, reports, limit):
    tail = done.output[-6000:]
    if done.hung:
        pytest.fail("HUNG: %s ran past its limit of %.0f s in its own process: killed (its "
                    "native stacks are in stacks.log; their top frames:)\n%s\n"
                    "its output, last part:\n%s"
                    % (nodeid, limit, stacks_digest(done.stacks), tail), pytrace=False)
    sys.stdout.write(done.output)  # pytest's capture (-rP shows it)
    failed = [r for r in reports if r["outcome"] == "failed"]
    if failed:
        pytest.fail("\n".join("[in its own process, %s]\n%s" % (r["when"], r["text"])
                              for r in failed), pytrace=False)
    for r in reports:
        if r["outcome"] == "skipped":
            pytest.skip(r["reason"])
        if r["outcome"] == "xfailed":
            pytest.xfail(r["reason"])
    whens = {r["when"]: r["outcome"] for r in reports}
    if done.rc != 0 or whens != {"setup": "passed", "call": "passed", "teardown": "passed"}:
        if done.rc is not None and done.rc < 0:
            how = "was killed by %s" % signal.Signals(-done.rc).name
        else:
            how = "exited with status %s" % done.rc
        pytest.fail("CRASHED: %s's process %s after reporting %s (a pass needs setup, call and "
                    "teardown passed and status 0)\nits output, last part:\n%s"
                    % (nodeid, how, whens or "nothing", tail), pytrace=False)


def pytest_configure(config):
    if os.environ.get(RESULT_ENV):
        if os.environ.get(STACKS_ENV):
            # kept open for the process's life: faulthandler writes to its fd
            config._isolation_stacks = open(os.environ[STACKS_ENV], "w")
            faulthandler.register(signal.SIGUSR1, file=config._isolation_stacks,
                                  all_threads=True)
        config.pluginmanager.register(_Child(), "isolation-child")
    else:
        config.pluginmanager.register(_Parent(), "isolation-parent")


class _Child:
    def pytest_runtest_logreport(self, report):
        _child_report(report)


class _Parent:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for i, item in enumerate(items):
            if isinstance(item, pytest.Function):
                items[i] = IsolatedTest.from_parent(item.parent, name=item.name, original=item)

    def pytest_collection_finish(self, session):
        ids = [item.nodeid for item in session.items]
        build = os.environ.get("BINDTHEM_GPU_BUILD")
        if build and os.path.isdir(build):
            with open(os.path.join(build, "expected.json"), "w") as f:
                json.dump(ids, f, indent=0)
