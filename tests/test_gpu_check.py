"""The device check's parts that run without a GPU: the prebuilt kernels
match their header, launch_floor.c builds and runs (against the mock), the
summary's verdict, the script's syntax. (tests/gpu/ itself needs a GPU.)"""

import json
import os
import shutil
import subprocess
import sys

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
    # refresh with `python tests/gpu/build_kernels.py --prebuilt` after editing the header
    blob = open(os.path.join(PREBUILT, name), "rb").read()
    assert kernel_symbols(HEADER, YAML) <= elf_function_symbols(blob)


def test_prebuilt_ptx_matches_the_header():
    import re
    ptx = open(os.path.join(PREBUILT, "gpu_kernels.compute_75.ptx")).read()
    assert kernel_symbols(HEADER, YAML) == set(re.findall(r"\.entry (\w+)\(", ptx))


def test_launch_floor_runs_against_the_mock(mock_path, tmp_path):  # noqa: F811
    exe = str(tmp_path / "launch_floor")
    subprocess.run([CC, "-O2", "-std=c11", "-Wall", "-Werror", os.path.join(GPU, "launch_floor.c"),
                    "-o", exe, "-ldl"], check=True)
    env = dict(os.environ, BINDTHEM_LIBCUDA=mock_path)
    out = subprocess.run([exe, os.path.join(PREBUILT, "gpu_kernels.sm_90.cubin"), "_Z4tinyPfi",
                          "3", "10"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    fig = json.loads(out.stdout)
    assert fig["bursts"] == 3 and fig["burst_len"] == 10 and 0 < fig["min_us"] <= fig["median_us"]
    bad = subprocess.run([exe, os.path.join(PREBUILT, "gpu_kernels.sm_90.cubin"), "no_such",
                          "3", "10"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and "cuModuleGetFunction failed: CUresult 500" in bad.stderr


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="t" name="test_a" time="0.1"/>
<testcase classname="t" name="test_b" time="0.1"><skipped message="%s"/></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize("skip, rc, ok", [
    ("CuPy not installed", 0, True), ("DeviceArray.__dlpack__ not built", 0, True),
    ("no build: $BINDTHEM_GPU_BUILD/manifest.json missing", 0, False),
    ("no CUDA device (driver + GPU)", 0, False), ("CuPy not installed", 1, False)])
def test_summary_verdict(tmp_path, skip, rc, ok):
    (tmp_path / "junit.xml").write_text(JUNIT % skip)
    (tmp_path / "figures.json").write_text(json.dumps({"launch": {"c_cuLaunchKernel_us": 2.5}}))
    out = subprocess.run([sys.executable, os.path.join(GPU, "summarize.py"), str(tmp_path),
                          "--pytest-status", str(rc)], capture_output=True, text=True,
                         env=dict(os.environ, OUT=str(tmp_path / "out")))
    assert out.returncode == (0 if ok else 1), out.stdout + out.stderr
    assert out.stdout.startswith("# bindthem device check: %s" % ("PASSED" if ok else "FAILED"))
    assert "| c_cuLaunchKernel_us | 2.500 |" in out.stdout
    summary = json.load(open(tmp_path / "out" / "summary.json"))
    assert summary["ok"] is ok and summary["tests"][1]["why"] == skip


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_script_syntax_and_no_swallowed_failures():
    for name in ("run_gpu_check.sh", "prepare_device.sh"):
        script = os.path.join(GPU, name)
        subprocess.run(["bash", "-n", script], check=True)
        text = open(script).read()
        assert "|| true" not in text and "set -euo pipefail" in text, name
