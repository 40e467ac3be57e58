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
    target = "launch overhead over C: 0.700 us (target <= 0.5 us: MISSED; asserted <= 2.0 us)"
    (tmp_path / "figures.json").write_text(json.dumps({"launch": {
        "host_us": {"c_cuLaunchKernel": 2.5}, "event_us": {"c_cuLaunchKernel": 3.0},
        "targets": [target]}}))
    out = subprocess.run([sys.executable, os.path.join(GPU, "summarize.py"), str(tmp_path),
                          "--pytest-status", str(rc)], capture_output=True, text=True,
                         env=dict(os.environ, OUT=str(tmp_path / "out")))
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
    out = subprocess.run([sys.executable, os.path.join(GPU, "summarize.py"), str(tmp_path),
                          "--pytest-status", "0"], capture_output=True, text=True)
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


def test_hang_probe_reports_a_hung_case_with_its_stacks(monkeypatch):
    """tests/cuda/gpu/probe_hangs.py: a case past its limit is reported as hung,
    with its last step, its Python stack (taken with no help from the
    blocked thread) and then killed; every case names a step after set-up."""
    sys.path.insert(0, GPU)
    try:
        import probe_hangs
    finally:
        sys.path.remove(GPU)
    for name, code in probe_hangs.CASES.items():
        compile(probe_hangs.HEAD + textwrap.dedent(code), name, "exec")
        assert "step(" in code or "copied(" in code, name
    monkeypatch.setattr(probe_hangs, "LIMIT", 2)
    monkeypatch.setattr(probe_hangs, "native_stacks", lambda pid: "native stacks of %d" % pid)
    monkeypatch.setattr(probe_hangs, "HEAD", probe_hangs.PRELUDE + "step = lambda w: print("
                        "'step:', w, flush=True)\nstep('set up')\n")
    lines = []
    monkeypatch.setattr(probe_hangs, "say", lambda line, log: lines.append(line))
    # a C call that holds the GIL: libc's sleep through ctypes.PyDLL
    blocked = "step('blocking')\nctypes.PyDLL(None).sleep(60)\n"
    assert probe_hangs.run_case("blocked", blocked, "unused", None) is False
    text = "\n".join(lines)
    assert "HUNG (over 2 s)" in lines[0] and "last step: blocking" in lines[0], text
    assert 'File "<string>", line' in text and "native stacks of" in text, text
    assert probe_hangs.run_case("quick", "step('done')\n", "unused", None) is True
