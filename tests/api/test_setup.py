"""setup.py: a missing compiler, Python.h or libffi/libyaml header stops the
build with one sentence naming the apt package."""

import os
import subprocess
import sys

import pytest

from sources import ROOT

SETUP = os.path.join(ROOT, "setup.py")

# A C compiler that cannot find one header: it fails the probe that includes it.
FAKE_CC = """#!/bin/sh
for a in "$@"; do
  case "$a" in
    *probe.c|*probe.cpp)
      if grep -q '%s' "$a"; then echo "fatal error: %s: No such file" >&2; exit 1; fi;;
  esac
done
exec gcc "$@"
"""


@pytest.mark.parametrize("header, package", [("ffi.h", "libffi-dev"), ("yaml.h", "libyaml-dev")])
def test_missing_header_names_the_apt_package(tmp_path, header, package):
    cc = compiler_without(tmp_path, header)
    assert last_line_of_failed_setup(str(cc)) == (
        "bindthem: cannot find <%s>; install it with `apt-get install %s`." % (header, package))


def compiler_without(tmp_path, header):
    """A C compiler that cannot find <header>; skips where setup.py can't run."""
    pytest.importorskip("setuptools")
    if not os.path.exists(SETUP):
        pytest.skip("no setup.py beside the tests")
    cc = tmp_path / "cc"
    cc.write_text(FAKE_CC % ("<%s>" % header, header))
    cc.chmod(0o755)
    return cc


def last_line_of_failed_setup(cc):
    """The last line setup.py prints to stderr when it fails with CC=cc."""
    env = dict(os.environ, CC=cc)
    proc = subprocess.run([sys.executable, SETUP, "--name"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    return [line for line in proc.stderr.splitlines() if line.strip()][-1]


def test_missing_python_headers_name_python3_dev(tmp_path):
    cc = compiler_without(tmp_path, "Python.h")
    line = last_line_of_failed_setup(str(cc))
    assert line.startswith("bindthem: cannot find <Python.h> for Python %d.%d (looked in "
                           % sys.version_info[:2])
    assert "`apt-get install python3-dev`" in line


def test_missing_c_compiler_says_so(tmp_path):
    pytest.importorskip("setuptools")
    if not os.path.exists(SETUP):
        pytest.skip("no setup.py beside the tests")
    line = last_line_of_failed_setup(str(tmp_path / "no-such-cc"))
    assert line == ("bindthem: no C compiler (`%s` not found); install one with "
                    "`apt-get install gcc g++`, or set CC." % (tmp_path / "no-such-cc"))


def test_missing_cxx_compiler_names_g_plus_plus(tmp_path):
    cc = compiler_without(tmp_path, "exception")
    line = last_line_of_failed_setup(str(cc))
    assert line == ("bindthem: `%s` cannot compile C++ (csrc/core/bt_guard.cpp); install it "
                    "with `apt-get install g++`." % cc)


def test_headers_present_passes_the_check(tmp_path):
    pytest.importorskip("setuptools")
    if not os.path.exists(SETUP):
        pytest.skip("no setup.py beside the tests")
    proc = subprocess.run([sys.executable, SETUP, "--name"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "bindthem"
