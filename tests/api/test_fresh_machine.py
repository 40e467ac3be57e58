"""README.rst's two set-up commands, run verbatim on a minimal Debian.

A ``debootstrap --variant=minbase`` root (nothing but apt and the package
registries) gets a clean clone of this checkout; both commands, read out of
README.rst, run inside it with ``chroot`` as root. The test fails if either
command fails or the test command's summary reports a failure.

Slow (a few minutes) and needs root, ``debootstrap``, ``chroot``, ``mount``,
git and the network: opt in with ``BINDTHEM_SLOW_TESTS=1`` (``.ci/run`` does).
The test command runs the core suite there (tests/core_suite.txt, by
``PYTEST_ADDOPTS="-m core"``, pytest's own variable): the whole suite runs
once, on the host. It runs once per Debian suite README.rst names as checked: bookworm (Debian
12, Python 3.11, gcc 12) and trixie (Debian 13, Python 3.13, gcc 14). Each
minbase root is built once and cached as a tarball under
``$BINDTHEM_TEST_CACHE`` (default ``~/.cache/bindthem-tests``), so a warm CI
does not debootstrap again, with pip's cache for the root beside it (the
wheels README's install fetches; the root itself starts without any), and
dpkg in the root skips its fsyncs (force-unsafe-io, as Debian's container
images have it); ``BINDTHEM_FRESH_SUITE`` (comma-separated, e.g. ``trixie``)
picks other suites, ``BINDTHEM_FRESH_MIRROR`` another mirror.
"""

import os
import re
import shutil
import subprocess
import tarfile

import pytest

from cached import cache_folder
from sources import ROOT

README = os.path.join(ROOT, "README.rst")
SUITES = [s.strip() for s in os.environ.get("BINDTHEM_FRESH_SUITE", "bookworm,trixie").split(",")
          if s.strip()]
MIRROR = os.environ.get("BINDTHEM_FRESH_MIRROR", "http://deb.debian.org/debian")
# Where the network's TLS trust lives on this host; copied into the root so
# apt, pip and urllib inside it can reach the registries through the same
# egress as the host (a no-op on a network without interception).
CA_DIR = "/usr/local/share/ca-certificates"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# Mounted for the run, in this order; unmounted in reverse.
MOUNTS = (("proc", ["-t", "proc", "proc"]), ("sys", ["--bind", "/sys"]),
          ("dev", ["--bind", "/dev"]), ("dev/pts", ["--bind", "/dev/pts"]),
          ("dev/shm", ["-t", "tmpfs", "shm"]))


def readme_commands(text):
    """The literal block after README's "Two commands" paragraph: its lines,
    exactly as written (one command per non-blank line)."""
    m = re.search(r"^Two commands .*?::\n\n((?:    [^\n]*\n|\n)+)", text, re.S | re.M)
    assert m, "README.rst has no 'Two commands ...::' literal block"
    cmds = [line[4:] for line in m.group(1).splitlines() if line.strip()]
    assert len(cmds) == 2, cmds
    return cmds


def cache_dir():
    return cache_folder()


def minbase_tarball(tmp_path, suite):
    """A tarball of a fresh minbase root of Debian ``suite``, made once with
    debootstrap."""
    tar = os.path.join(cache_dir(), "debian-%s-minbase.tar" % suite)
    if os.path.exists(tar):
        return tar
    target = tmp_path / "debootstrap"
    proc = subprocess.run(["debootstrap", "--variant=minbase", suite, str(target), MIRROR],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, "debootstrap of %s failed:\n%s%s" % (suite, proc.stdout[-3000:],
                                                                     proc.stderr)
    part = tar + ".%d.part" % os.getpid()
    with tarfile.open(part, "w") as t:
        t.add(str(target), arcname=".")
    os.replace(part, tar)
    shutil.rmtree(target, ignore_errors=True)
    return tar


def unpack_root(tar, dest):
    dest.mkdir()
    subprocess.run(["tar", "-C", str(dest), "-xf", tar], check=True)
    # dpkg without an fsync per file, as Debian's container images set it: the root is
    # thrown away after the test, and apt's install takes half the time
    with open(os.path.join(str(dest), "etc", "dpkg", "dpkg.cfg.d", "unsafe-io"), "w") as f:
        f.write("force-unsafe-io\n")
    for f in ("/etc/resolv.conf", "/etc/hosts"):
        if os.path.exists(f):
            shutil.copy(f, str(dest) + f, follow_symlinks=True)
    if os.path.isdir(CA_DIR):
        shutil.copytree(CA_DIR, str(dest) + CA_DIR, dirs_exist_ok=True)
    if os.path.exists(CA_BUNDLE):
        os.makedirs(os.path.dirname(str(dest) + CA_BUNDLE), exist_ok=True)
        shutil.copy(CA_BUNDLE, str(dest) + CA_BUNDLE)
        # Kept apart too: installing ca-certificates regenerates CA_BUNDLE.
        shutil.copy(CA_BUNDLE, str(dest) + "/etc/host-ca-bundle.crt")


def run_in_root(root, cmd, log, **extra):
    """Runs cmd (a shell command line) as root inside root, in the clone, with
    the environment a root login has (plus the network's CA bundle and extra)."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb", **extra}
    if os.path.exists(CA_BUNDLE):
        for var in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            env[var] = "/etc/host-ca-bundle.crt"
    with open(log, "w") as out:
        proc = subprocess.run(["chroot", str(root), "/bin/sh", "-c", "cd /src/bindthem && " + cmd],
                              env=env, stdout=out, stderr=subprocess.STDOUT, timeout=1800)
    with open(log) as f:
        return proc.returncode, f.read()


def test_readme_names_two_commands():
    with open(README) as f:
        cmds = readme_commands(f.read())
    assert cmds[0].endswith("examples/run_example.py")
    assert cmds[1].endswith("pytest -q -n auto tests")
    # the example's command installs what the example needs (bindthem, NumPy), not the
    # test stack; the two differ there, and the paragraph above them says so
    assert "pip install . && " in cmds[0] and "[test]" not in cmds[0], cmds[0]
    assert "pip install '.[test]' && " in cmds[1], cmds[1]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (debootstrap + the README commands, minutes)")
@pytest.mark.parametrize("suite", SUITES)
def test_readme_commands_on_a_minimal_debian(tmp_path, suite):
    for tool in ("debootstrap", "chroot", "mount", "umount", "git", "tar"):
        if not shutil.which(tool):
            pytest.skip("needs %s" % tool)
    if os.geteuid() != 0:
        pytest.skip("needs root (chroot, mount)")
    if not os.path.exists(os.path.join(ROOT, ".git")):  # a folder, or a worktree's file
        pytest.skip("needs a git checkout to clone")
    with open(README) as f:
        example_cmd, test_cmd = readme_commands(f.read())

    root = tmp_path / "root"
    unpack_root(minbase_tarball(tmp_path, suite), root)
    subprocess.run(["git", "clone", "-q", ROOT, str(root / "src" / "bindthem")], check=True)

    mounted = []
    try:
        # pip's cache (/root/.cache/pip) kept outside the root, one per suite: what README's
        # pip install downloads is fetched once, not on every run (the index is still asked)
        pip_cache = os.path.join(cache_dir(), "pip-%s" % suite)
        os.makedirs(pip_cache, exist_ok=True)
        for where, how in MOUNTS + (("root/.cache/pip", ["--bind", pip_cache]),):
            target = root / where
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount"] + how + [str(target)], check=True)
            mounted.append(target)
        rc, out = run_in_root(root, example_cmd, tmp_path / "example.log")
        assert rc == 0, "README's example command failed on %s (rc %d):\n%s" % (suite, rc,
                                                                                out[-6000:])
        # verbatim; pytest's own PYTEST_ADDOPTS narrows it to the core suite (marker
        # `core`): the whole suite runs once, on the host (README's command in .ci/run)
        rc, out = run_in_root(root, test_cmd, tmp_path / "tests.log", PYTEST_ADDOPTS="-m core")
        summary = out.strip().splitlines()[-1] if out.strip() else ""
        assert rc == 0, "README's test command failed on %s (rc %d):\n%s" % (suite, rc,
                                                                             out[-6000:])
        assert re.search(r"\d+ passed", summary) and "failed" not in summary \
            and "error" not in summary, summary
    finally:
        for target in reversed(mounted):
            if subprocess.run(["umount", str(target)]).returncode != 0:
                subprocess.run(["umount", "-l", str(target)])
    # Never delete through a mount that is still there (it would be the host's /dev).
    still = [str(t) for t in mounted if os.path.ismount(str(t))]
    assert not still, "could not unmount %s; remove %s by hand" % (still, root)
    shutil.rmtree(root, ignore_errors=True)
