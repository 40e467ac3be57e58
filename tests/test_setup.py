"""setup.py: a missing libffi/libyaml header stops the build with one
sentence naming the apt package."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = os.path.join(ROOT, "setup.py")

# A C compiler that cannot find one header: it fails the probe that includes it.
FAKE_CC = """#!/bin/sh
for a in "$@"; do
  case "$a" in
    *probe.c) if grep -q '<%s>' "$a"; then echo "fatal error: %s: No such file" >&2; exit 1; fi;;
  esac
done
exec gcc "$@"
"""


@pytest.mark.parametrize("header, package", [("ffi.h", "libffi-dev"), ("yaml.h", "libyaml-dev")])
def test_missing_header_names_the_apt_package(tmp_path, header, package):
    pytest.importorskip("setuptools")
    if not os.path.exists(SETUP):
        pytest.skip("no setup.py beside the tests")
    cc = tmp_path / "cc"
    cc.write_text(FAKE_CC % (header, header))
    cc.chmod(0o755)
    env = dict(os.environ, CC=str(cc))
    proc = subprocess.run([sys.executable, SETUP, "--name"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1] == ("bindthem: cannot find <%s>; install it with `apt-get install %s`."
                         % (header, package))


def test_headers_present_passes_the_check(tmp_path):
    pytest.importorskip("setuptools")
    if not os.path.exists(SETUP):
        pytest.skip("no setup.py beside the tests")
    proc = subprocess.run([sys.executable, SETUP, "--name"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "bindthem"
