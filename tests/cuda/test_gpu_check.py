"""The device check's parts that run without a GPU: the prebuilt kernels
match their header, launch_floor.c builds and runs (against the mock), the
summary's verdict (only an optional library or GPU "not installed" may
skip), the scripts' syntax and budget. (tests/cuda/gpu/ itself needs a GPU.)"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from cuda_support import CC, elf_function_symbols, kernel_symbols

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(HERE, "gpu")
PREBUILT = os.path.join(GPU, "prebuilt")
HEADER = os.path.join(GPU, "gpu_kernels.cuh")
YAML = os.path.join(GPU, "gpu_kernels.yml")


@pytest.mark.parametrize("name", ["gpu_kernels.fatbin", "gpu_kernels.sm_75.cubin",
                                  "gpu_kernels.sm_90.cubin"])
def test_prebuilt_kernels_match_the_header(name):
    # refresh with `python tests/cuda/gpu/build_kernels.py --prebuilt` after editing the header
    blob = open(os.path.join(PREBUILT, name), "rb").read()
    assert kernel_symbols(HEADER, YAML) <= elf_function_symbols(blob)


def test_prebuilt_ptx_matches_the_header():
    import re
    ptx = open(os.path.join(PREBUILT, "gpu_kernels.compute_75.ptx")).read()
    assert kernel_symbols(HEADER, YAML) == set(re.findall(r"\.entry (\w+)\(", ptx))


FLOOR = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.floor_error.restype = ctypes.c_char_p
lib.floor_burst.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_double)] * 2
print(lib.floor_open(sys.argv[2].encode(), sys.argv[3].encode()), lib.floor_error().decode())
host, ev = ctypes.c_double(), ctypes.c_double()
if sys.argv[3] == "_Z4tinyPfi":
    print(lib.floor_burst(10, ctypes.byref(host), ctypes.byref(ev)), host.value, ev.value)
"""


def test_launch_floor_runs_against_the_mock(mock_path, tmp_path):  # noqa: F811
    so = str(tmp_path / "launch_floor.so")
    subprocess.run([CC, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC",
                    os.path.join(GPU, "launch_floor.c"), "-o", so, "-ldl"], check=True)
    env = dict(os.environ, BINDTHEM_LIBCUDA=mock_path)
    cubin = os.path.join(PREBUILT, "gpu_kernels.sm_90.cubin")

    def run(kernel):
        out = subprocess.run([sys.executable, "-c", FLOOR, so, cubin, kernel],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    opened, burst = run("_Z4tinyPfi")
    assert opened.strip() == "0"
    rc, host, ev = burst.split()
    # the mock's clock: 1 ms per kernel it runs, 10 launches between the events
    assert rc == "0" and float(host) > 0 and float(ev) == 1000.0
    (bad,) = run("no_such")
    assert bad.startswith("500 launch_floor: cuModuleGetFunction failed: CUresult 500"), bad


def _complete(work, expected=("t.py::test_a", "t.py::test_b"), probe=None):
    """What a whole run leaves beside junit.xml: the list collected, the probe's results."""
    (work / "expected.json").write_text(json.dumps(list(expected)))
    (work / "hangs.json").write_text(json.dumps(probe if probe is not None else [
        {"case": "control", "verdict": "passed", "took": 1.0, "last_step": "copied",
         "counts": True}]))


def _summarize(work, rc, *extra, env=None):
    return subprocess.run([sys.executable, os.path.join(GPU, "summarize.py"), str(work),
                           "--pytest-status", str(rc)] + list(extra), capture_output=True,
                          text=True, env=env)


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="t" name="test_a" time="0.1"/>
<testcase classname="t" name="test_b" time="0.1"><skipped message="%s"/></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize("skip, rc, ok", [
    ("CuPy not installed", 0, True), ("PyTorch not installed with CUDA", 0, True),
    ("ml_dtypes not installed", 0, True),
    ("needs 2 CUDA devices (optional hardware not installed)", 0, True),
    ("tests/cuda/gpu/test_gpu.py:12: CuPy not installed", 0, True),
    ("DeviceArray.__dlpack__ not built", 0, False),
    ("not built: gpu_launch.cuh: nvcc failed", 0, False),
    ("no build: $BINDTHEM_GPU_BUILD/manifest.json missing", 0, False),
    ("no CUDA device (driver + GPU)", 0, False), ("numba not installed", 0, False),
    ("CuPy not installed", 1, False)])
def test_summary_verdict(tmp_path, skip, rc, ok):
    (tmp_path / "junit.xml").write_text(JUNIT % skip)
    _complete(tmp_path)
    target = "launch overhead over C: 0.700 us (target <= 0.5 us: MISSED; asserted <= 2.0 us)"
    (tmp_path / "figures.json").write_text(json.dumps({"launch": {
        "host_us": {"c_cuLaunchKernel": 2.5}, "event_us": {"c_cuLaunchKernel": 3.0},
        "targets": [target]}}))
    out = _summarize(tmp_path, rc, env=dict(os.environ, OUT=str(tmp_path / "out")))
    assert out.returncode == (0 if ok else 1), out.stdout + out.stderr
    assert out.stdout.startswith("# bindthem device check: %s" % ("PASSED" if ok else "FAILED"))
    assert "| c_cuLaunchKernel | 2.500 | 3.000 |" in out.stdout
    assert "- " + target in out.stdout
    summary = json.load(open(tmp_path / "out" / "summary.json"))
    assert summary["ok"] is ok and summary["tests"][1]["why"] == skip


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_script_syntax_and_no_swallowed_failures():
    for name in ("run_gpu_check.sh", "prepare_device.sh"):
        script = os.path.join(GPU, name)
        subprocess.run(["bash", "-n", script], check=True)
        text = open(script).read()
        assert "|| true" not in text and "set -euo pipefail" in text, name


def test_summary_of_no_tests_fails(tmp_path):
    out = _summarize(tmp_path, 0)
    assert out.returncode == 1 and "FAILED" in out.stdout.splitlines()[0]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_check_stops_when_its_budget_is_spent(tmp_path):
    """With no time left the first timed step is refused, says so, and
    still writes the summary and its log into $OUT."""
    out_dir = tmp_path / "out"
    env = dict(os.environ, BINDTHEM_GPU_BUDGET="1", OUT=str(out_dir),
               BINDTHEM_GPU_WORK=str(tmp_path / "work"),
               PYTHON=sys.executable, BINDTHEM_GPU_REBUILD="1")
    p = subprocess.run(["bash", os.path.join(GPU, "run_gpu_check.sh")], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "budget of 1 s is spent" in p.stderr
    summary = json.load(open(out_dir / "summary.json"))
    assert summary["ok"] is False and "budget" in summary["failed_step"]


def test_hang_probe_reports_a_hung_case_with_its_stacks(monkeypatch, tmp_path):
    """tests/cuda/gpu/probe_hangs.py: a case past its limit is reported as hung,
    with its last step, its Python stack (taken with no help from the
    blocked thread) and then killed; every case names a step after set-up;
    with no time left before the check's deadline a case is not run."""
    sys.path.insert(0, GPU)
    try:
        import isolation
        import probe_hangs
    finally:
        sys.path.remove(GPU)
    for name, code in probe_hangs.CASES.items():
        compile(probe_hangs.HEAD + textwrap.dedent(code), name, "exec")
        assert "step(" in code or "copied(" in code, name
    assert probe_hangs.DRIVER_ONLY <= set(probe_hangs.CASES)
    monkeypatch.setattr(probe_hangs, "LIMIT", 2)
    monkeypatch.setattr(isolation, "native_stacks", lambda pid: "Thread 1\n#0 native of %d" % pid)
    monkeypatch.setattr(probe_hangs, "HEAD", probe_hangs.PRELUDE + "step = lambda w: print("
                        "'step:', w, flush=True)\nstep('set up')\n")
    monkeypatch.setenv("BINDTHEM_GPU_BUILD", str(tmp_path))
    monkeypatch.delenv("BINDTHEM_GPU_DEADLINE", raising=False)
    lines = []
    monkeypatch.setattr(probe_hangs, "say", lines.append)
    # a C call that holds the GIL: libc's sleep through ctypes.PyDLL
    blocked = "step('blocking')\nctypes.PyDLL(None).sleep(60)\n"
    res = probe_hangs.run_case("blocked", blocked, "unused")
    text = "\n".join(lines)
    assert res["verdict"] == "HUNG (over 2 s)" and res["last_step"] == "blocking", text
    assert 'File "<string>", line' in text and "#0 native of" in text, text
    assert "native of" in (tmp_path / "stacks.log").read_text()
    assert probe_hangs.run_case("quick", "step('done')\n", "unused")["verdict"] == "passed"
    monkeypatch.setenv("BINDTHEM_GPU_DEADLINE", str(time.time() + 5))
    assert probe_hangs.run_case("late", "step('done')\n", "unused")["verdict"].startswith(
        "not run")


# ---- each test in its own process (tests/cuda/gpu/isolation.py) ----

DEMO = '''
import ctypes, os, time
import pytest


def test_hangs_holding_the_gil():
    print("about to block")
    ctypes.PyDLL(None).sleep(120)  # libc's sleep, the GIL held: no signal handler runs


def test_after_the_hang():
    assert 1 + 1 == 2


def test_crashes():
    os.abort()


def test_fails():
    assert 2 == 3, "two is not three"


@pytest.mark.parametrize("lib", ["CuPy"])
def test_skips(lib):
    pytest.skip(lib + " not installed")


@pytest.mark.isolated(limit=1)
def test_own_limit():
    time.sleep(60)
'''


def _isolated_session(tmp_path, limit="3", deadline=None, timeout=90):
    """pytest on DEMO with -p isolation: (wall seconds, {name: (state, message)})."""
    import xml.etree.ElementTree as ET

    (tmp_path / "test_demo.py").write_text(DEMO)
    env = dict(os.environ, BINDTHEM_GPU_BUILD=str(tmp_path), BINDTHEM_GPU_TEST_LIMIT=limit,
               PYTHONPATH=GPU + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OUT", None)
    env.pop("BINDTHEM_GPU_DEADLINE", None)
    if deadline is not None:
        env["BINDTHEM_GPU_DEADLINE"] = str(time.time() + deadline)
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "isolation", "-p",
                        "no:cacheprovider", "-q", "--junitxml", str(tmp_path / "junit.xml"),
                        str(tmp_path / "test_demo.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - start
    assert (tmp_path / "junit.xml").exists(), p.stdout + p.stderr
    states = {}
    for tc in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase"):
        el = next((e for e in tc if e.tag in ("failure", "error", "skipped")), None)
        msg = "" if el is None else el.get("message")
        msg = msg[len("Failed: "):] if msg.startswith("Failed: ") else msg  # pytest.fail's
        states[tc.get("name")] = ("passed", "") if el is None else (el.tag, msg)
    return took, states, p.stdout + p.stderr


def test_a_hang_costs_its_test_only_and_a_crash_is_one_failure(tmp_path):
    took, states, out = _isolated_session(tmp_path)
    # 2 limits (3 s, 1 s) plus their stacks, and 4 quick children: far below 60 s
    assert took < 45, out
    state, msg = states["test_hangs_holding_the_gil"]
    assert state == "failure" and msg.startswith("HUNG: test_demo.py::test_hangs_holding_the_gil "
                                                 "ran past its limit of 3 s"), out
    assert states["test_after_the_hang"] == ("passed", ""), out
    state, msg = states["test_crashes"]
    assert state == "failure" and msg.startswith("CRASHED") and "SIGABRT" in msg, out
    state, msg = states["test_fails"]
    assert state == "failure" and "two is not three" in msg, out
    assert states["test_skips[CuPy]"] == ("skipped", "CuPy not installed"), out
    state, msg = states["test_own_limit"]
    assert state == "failure" and "limit of 1 s" in msg, out
    # the hang's Python stack came from the blocked process (faulthandler: no GIL needed)
    assert "line 8 in test_hangs_holding_the_gil" in out, out
    stacks = (tmp_path / "stacks.log").read_text()
    assert "==== test_demo.py::test_hangs_holding_the_gil: HUNG" in stacks, stacks
    expected = json.load(open(tmp_path / "expected.json"))
    assert len(expected) == 6 and "test_demo.py::test_skips[CuPy]" in expected
    # and the summary names them
    (tmp_path / "hangs.json").write_text("[]")
    s = _summarize(tmp_path, 1)
    assert s.returncode == 1, s.stdout
    assert "2 hung (killed past their limit): test_hangs_holding_the_gil, test_own_limit" \
        in s.stdout and "1 crashed: test_crashes" in s.stdout, s.stdout


def test_the_budget_cuts_each_limit_and_then_refuses_to_start(tmp_path):
    """With 20 s to the deadline the first test's 60 s limit is cut to what is
    left less the stacks' time (about 8 s); after it, too little is left: the
    others are not started, each a failure, and the session ends in time."""
    took, states, out = _isolated_session(tmp_path, limit="60", deadline=20)
    assert took < 20, out
    state, msg = states["test_hangs_holding_the_gil"]
    limit = float(msg.split("limit of ")[1].split()[0])
    assert state == "failure" and msg.startswith("HUNG") and 4 <= limit <= 8, msg
    for name in ("test_after_the_hang", "test_crashes", "test_own_limit"):
        state, msg = states[name]
        assert state == "failure" and msg.startswith("not run: the check's budget is spent"), msg
    (tmp_path / "hangs.json").write_text("[]")
    s = _summarize(tmp_path, 1)
    assert "not started: the budget was spent: test_after_the_hang" in s.stdout, s.stdout


# ---- missing results can never pass (summarize.py) ----

PROBE_HUNG = [{"case": "writer exited, copied", "verdict": "HUNG (over 10 s)", "took": 10,
               "last_step": "worker exited", "counts": True}]
PROBE_DRIVER = [{"case": "driver's cuStreamCreate", "verdict": "HUNG (over 10 s)", "took": 10,
                 "last_step": "worker exited", "counts": False}]


@pytest.mark.parametrize("case, why", [
    ("complete", None),
    ("no junit", "no JUnit XML: pytest did not finish"),
    ("no expected", "no list of the tests collected"),
    ("a test not run", "1 tests collected but never run (no result): t.py::test_c"),
    ("no probe", "no hang-probe results"),
    ("probe case hung", "hang probe: 1 cases did not pass: writer exited, copied"),
    ("driver-only probe case hung", None),
    ("killed", "pytest was killed at its limit (status 124)"),
    ("a file without tests", "tests/cuda/gpu/test_gpu_findings.py: no test collected from it")])
def test_missing_results_cannot_pass(tmp_path, case, why):
    (tmp_path / "junit.xml").write_text(JUNIT % "CuPy not installed")
    _complete(tmp_path, probe={"probe case hung": PROBE_HUNG,
                               "driver-only probe case hung": PROBE_DRIVER}.get(case))
    extra, rc = [], 0
    if case == "no junit":
        (tmp_path / "junit.xml").unlink()
    elif case == "no expected":
        (tmp_path / "expected.json").unlink()
    elif case == "a test not run":
        _complete(tmp_path, expected=("t.py::test_a", "t.py::test_b", "t.py::test_c"))
    elif case == "no probe":
        (tmp_path / "hangs.json").unlink()
    elif case == "killed":
        rc = 124
    elif case == "a file without tests":
        # relative to the repository root, summarize.py's cwd (not this process's)
        extra = ["--test-dir", os.path.relpath(GPU, os.path.dirname(os.path.dirname(HERE)))]
    out = subprocess.run([sys.executable, os.path.join(GPU, "summarize.py"), str(tmp_path),
                          "--pytest-status", str(rc), "--probe-status", "0"] + extra,
                         capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(HERE)))
    assert out.returncode == (0 if why is None else 1), out.stdout + out.stderr
    if why is not None:
        assert "## Why it failed" in out.stdout and why in out.stdout, out.stdout
    summary = json.load(open(tmp_path / "summary.json"))
    assert summary["ok"] is (why is None)


def test_summary_says_when_the_launch_overhead_was_not_measured(tmp_path):
    (tmp_path / "junit.xml").write_text(JUNIT % "CuPy not installed")
    _complete(tmp_path)
    out = _summarize(tmp_path, 0)
    assert "Launch overhead against a direct cuLaunchKernel: NOT MEASURED" in out.stdout


# ---- the builds carried from here (build_kernels.py --from, run_gpu_check.sh) ----

def test_carried_kernels_are_used_only_when_their_sources_match(tmp_path, capsys):
    sys.path.insert(0, GPU)
    try:
        import build_kernels
    finally:
        sys.path.remove(GPU)
    import bindthem.cuda as cuda

    carried = tmp_path / "carried"
    carried.mkdir()
    man = {key: "/elsewhere/%s.bin" % key for key in build_kernels.BUILT}
    man.update(compiler="nvcc", launch_floor="/elsewhere/launch_floor.so",
               source_hash=build_kernels.source_hash(cuda))
    for key in build_kernels.BUILT:
        (carried / os.path.basename(man[key])).write_bytes(b"not a library")
    (carried / "manifest.json").write_text(json.dumps(dict(man, source_hash="0" * 64)))
    assert build_kernels.reuse(str(carried), str(tmp_path / "out")) is None
    assert "is stale" in capsys.readouterr().out
    (carried / "manifest.json").write_text(json.dumps(man))
    got = build_kernels.reuse(str(carried), str(tmp_path / "out"))
    assert got["module"] == str(tmp_path / "out" / "module.bin")
    assert got["header"] == HEADER and got["reused_from"] == str(carried)
    # the carried launch_floor.so did not load here: built again, and it loads
    assert (tmp_path / "out" / "launch_floor.so").read_bytes()[:4] == b"\x7fELF"
    assert json.load(open(tmp_path / "out" / "manifest.json")) == got


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.exists(
    "/usr/local/cuda/bin/nvcc"), reason="needs nvcc")
def test_dry_run_without_a_gpu(tmp_path):
    """No GPU: every kernel is built (nothing carried), then status 3, with the
    tests and the hang probe's cases that would run listed, and a summary."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is installed here: the dry run needs none")
    except OSError:
        pass
    env = dict(os.environ, PYTHON=sys.executable, BINDTHEM_GPU_WORK=str(tmp_path / "work"),
               BINDTHEM_GPU_CARRIED=str(tmp_path / "none"), BINDTHEM_GPU_REBUILD="0",
               OUT=str(tmp_path / "out"))
    p = subprocess.run(["bash", os.path.join(GPU, "run_gpu_check.sh")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 3, p.stdout + p.stderr
    man = json.load(open(tmp_path / "work" / "manifest.json"))
    for key in ("module", "cubin_sm75", "cubin_sm90", "ptx", "features", "launch",
                "launch_floor"):
        assert os.path.getsize(man[key]) > 0, key
    assert man["compiler"].startswith("nvcc") and len(man["source_hash"]) == 64
    assert "would run, each test in its own process" in p.stdout
    assert ("tests/cuda/gpu/test_gpu_findings.py::test_per_thread_write_copied_from_another_thread"
            in p.stdout)
    assert "write after read on another stream (the other hung test)" in p.stdout
    summary = json.load(open(tmp_path / "out" / "summary.json"))
    assert summary["ok"] is False and "no GPU" in summary["failed_step"]
    assert sorted(os.listdir(tmp_path / "out")) == ["steps.log", "summary.json", "summary.md"]
