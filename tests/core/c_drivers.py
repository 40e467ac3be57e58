"""Builds the pure-C test drivers (tests/core/c/dump_header.c, dump_plan.c,
faults.c for allocation failures, expr_driver.c for the annotations'
expressions, and scale.c for sizes and times) once per
test process, against csrc's pure layers (every C file of the PURE folders
of tests/core/c/layers.py), with ASan/UBSan when gcc has them (not scale.c)."""

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile

CDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")  # tests/core/c
sys.path.insert(0, CDIR)
import layers  # noqa: E402

ROOT = layers.ROOT
CSRC = layers.CSRC
INCLUDES = ["-I" + d for d in layers.include_dirs()]
PURE_C = list(layers.pure_sources((".c",)).values())
DRIVERS = ("dump_header", "dump_plan", "faults", "expr_driver")
# built -O2 without sanitizers: its times and byte counts are the real ones
OPTIMIZED = ("scale",)
# every allocation a malloc of its own, each of which can be made to fail
EXTRA = {"faults": ["-DBT_FAULT_INJECTION", "-DBT_ARENA_EXACT"]}
CC = os.environ.get("CC", "gcc")


def have_sanitizers():
    """True when gcc can link -fsanitize=address (libasan is installed)."""
    try:
        out = subprocess.run([CC, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(out) and os.path.exists(out)


def flags():
    f = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"] + INCLUDES
    if have_sanitizers():
        # one malloc block per arena allocation, so ASan sees overflows
        f += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
              "-fno-sanitize-recover=undefined", "-DBT_ARENA_EXACT"]
    return f


@functools.lru_cache(maxsize=None)
def build():
    """{driver name: executable path}. RuntimeError with gcc's output on failure;
    OSError when there is no gcc."""
    if not shutil.which(CC):
        raise OSError("no C compiler %r" % CC)
    out = tempfile.mkdtemp(prefix="bindthem-drivers-")
    atexit.register(shutil.rmtree, out, True)
    procs = {}
    for d in DRIVERS + OPTIMIZED:
        exe = os.path.join(out, d)
        f = flags() if d in DRIVERS else ["-std=c11", "-Wall", "-Wextra", "-Werror",
                                          "-O2"] + INCLUDES
        f = [x for x in f if x not in EXTRA.get(d, ())] + EXTRA.get(d, [])
        cmd = [CC] + f + [os.path.join(CDIR, d + ".c")] + PURE_C + [
            "-lyaml", "-lffi", "-ldl", "-o", exe]
        procs[d] = (exe, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True))
    paths = {}
    for d, (exe, cmd, p) in procs.items():
        text, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), text))
        paths[d] = exe
    return paths


def env():
    """Environment for running a driver: sanitizer reports are fatal."""
    e = dict(os.environ)
    e["ASAN_OPTIONS"] = "abort_on_error=0:exitcode=99:detect_leaks=1"
    e["UBSAN_OPTIONS"] = "halt_on_error=1:exitcode=98:print_stacktrace=1"
    return e


def run(driver, *args):
    """CompletedProcess of one driver run (text, stdout and stderr apart)."""
    return subprocess.run([build()[driver]] + [str(a) for a in args], capture_output=True,
                          text=True, env=env(), timeout=120)
