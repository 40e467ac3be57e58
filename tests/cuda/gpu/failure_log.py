"""A pytest plugin of the device check (run_gpu_check.sh loads it with
``-p failure_log``, so that it runs there only, not in the whole suite): the
failures, written as they happen. A run cut short at its time limit (the
device tool's, or the check's budget) still brings back every traceback so
far (a hung test's included: isolation.py), in $BINDTHEM_GPU_BUILD/failures.log
and $OUT/failures.log."""

import os


def _logs():
    return [os.path.join(d, "failures.log") for d in (os.environ.get("BINDTHEM_GPU_BUILD"),
                                                       os.environ.get("OUT")) if d]


def pytest_sessionstart(session):
    for path in _logs():
        if os.path.isdir(os.path.dirname(path)):
            open(path, "w").close()


def pytest_runtest_logreport(report):
    if not report.failed:
        return
    text = "==== %s (%s)\n%s\n\n" % (report.nodeid, report.when, report.longreprtext)
    for path in _logs():
        if os.path.isdir(os.path.dirname(path)):
            with open(path, "a") as f:
                f.write(text)
