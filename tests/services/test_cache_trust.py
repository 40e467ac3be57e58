"""The build cache tried as an attacker and an unlucky user would: a second
user (made with useradd, removed after) planting libraries, planted symlinks,
truncated libraries, concurrent builds at the size limit, SIGKILL, a
read-only cache, a full disk, umask 000. Runs as root (it makes a user and
mounts filesystems); every build runs in a subprocess, so a crash fails one
test. README: "The build cache"."""

import fcntl
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from support import python_env

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root: makes a second user with useradd and mounts tmpfs/bind mounts")

KERNEL = """\
void axpy(const double x[], const int x_size, double y[], const int y_size, double a)
{
    for (int i = 0; i < x_size; i++)
        y[i] += a * x[i];
}
"""
EVIL = """\
#include <stdio.h>
__attribute__((constructor)) static void planted(void)
{
    FILE *f = fopen("%s", "w");
    if (f) { fputs("planted library ran\\n", f); fclose(f); }
}
extern "C++" void axpy(const double x[], const int x_size, double y[], const int y_size,
                       double a) { for (int i = 0; i < x_size; i++) y[i] -= a * x[i]; }
"""
# builds the kernel, calls it, prints the result and the library's path; a
# BuildError is printed as "BuildError: ..." (exit 3)
BUILD = textwrap.dedent("""\
    import sys, warnings
    import numpy as np, bindthem
    warnings.simplefilter("always")
    try:
        lib = bindthem.build(sys.argv[1], **eval(sys.argv[2] if len(sys.argv) > 2 else "{}"))
    except bindthem.BuildError as e:
        print("BuildError:", e)
        sys.exit(3)
    y = np.zeros(4)
    lib.axpy(np.arange(4.0), y, 2.0)
    print(y.tolist(), lib.__file__)
""")
RESULT = "[0.0, 2.0, 4.0, 6.0]"
FAKE_CXX = """\
#!/bin/sh
# a fast stand-in compiler: copies the library prebuilt for the header named in the source
# (the snapshot's name: the header of that name in the -iquote folder)
[ "$1" = --version ] && { echo fake-cxx 1; exit 0; }
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift;; -MF) dep=$2; shift;; -iquote) inc=$2; shift;; -*) ;;
  *) src=$1;; esac; shift
done
h=$(sed -n 's/^#include "\\(.*\\)"$/\\1/p' "$src")
case "$h" in /*) ;; *) h=$inc/$h;; esac
cp "${h%.h}.so" "$out.part" && mv "$out.part" "$out" && echo "x: $src $h" > "$dep"
"""


def run(script, *args, env=None, user=None, timeout=120, python=sys.executable, **kw):
    return subprocess.run([python, "-c", script, *map(str, args)], env=env,
                          user=user, capture_output=True, text=True, timeout=timeout,
                          cwd="/", **kw)


def build(header, cache, *, env=None, user=None, options="{}", python=sys.executable, **extra):
    env = python_env(env, BINDTHEM_CACHE=str(cache), **extra)
    return run(BUILD, header, options, env=env, user=user, python=python)


def built(r):
    assert r.returncode == 0, r.stdout + r.stderr
    assert RESULT in r.stdout, r.stdout + r.stderr
    return r.stdout.split()[-1]


def tree(folder):
    """{relative path: (mode, uid, size, link target)} of everything under folder."""
    out = {}
    for d, dirs, files in os.walk(folder):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, folder)] = (
                stat.S_IMODE(st.st_mode), st.st_uid, st.st_size if stat.S_ISREG(st.st_mode)
                else 0, os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A folder every user may read: the kernel header, the planted library."""
    d = tempfile.mkdtemp(prefix="bt-trust-")
    os.chmod(d, 0o755)
    header = os.path.join(d, "k.h")
    with open(header, "w") as f:
        f.write(KERNEL)
    sentinel = os.path.join(d, "planted-ran")
    src = os.path.join(d, "evil.cpp")
    with open(src, "w") as f:
        f.write(EVIL % sentinel)
    subprocess.run(["g++", "-shared", "-fPIC", "-o", os.path.join(d, "evil.so"), src],
                   check=True)
    os.chmod(d, 0o777 | stat.S_ISVTX)  # the second user writes its sentinel here... or not
    yield {"dir": d, "header": header, "sentinel": sentinel, "evil": os.path.join(d, "evil.so")}
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def fast(shared):
    """private-ish env with CXX a stand-in compiler that copies k.so, prebuilt."""
    tmp = tempfile.mkdtemp()
    lib = built(build(shared["header"], tmp, TMPDIR=tmp))
    shutil.copy(lib, os.path.join(shared["dir"], "k.so"))
    shutil.rmtree(tmp)
    cxx = os.path.join(shared["dir"], "fakecxx")
    with open(cxx, "w") as f:
        f.write(FAKE_CXX)
    os.chmod(cxx, 0o755)
    return {"CXX": cxx}


@pytest.fixture(scope="module")
def user():
    """A second user, removed after (also when a test fails)."""
    if not shutil.which("useradd"):
        pytest.skip("no useradd")
    name = "bttrust%d" % os.getpid()
    r = subprocess.run(["useradd", "-M", "-N", "-d", "/nonexistent", "-s", "/bin/sh", name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("useradd failed: %s" % r.stderr.strip())
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def user_python(user, need_bindthem=False):
    """An interpreter the second user may run (this one may live in root's home)."""
    for python in ([sys.executable] if need_bindthem else [sys.executable, "/usr/bin/python3"]):
        try:
            r = subprocess.run([python, "-c", "import numpy" if need_bindthem else "pass"],
                               user=user.pw_uid, capture_output=True, cwd="/",
                               env=python_env() if need_bindthem else None)
        except OSError:
            continue
        if r.returncode == 0:
            return python
    pytest.skip("no Python interpreter%s the second user may run"
                % (" with NumPy" if need_bindthem else ""))


@pytest.fixture
def open_tmp():
    """A folder other users may traverse (pytest's tmp_path is root's alone)."""
    d = tempfile.mkdtemp(prefix="bt-trust-case-")
    os.chmod(d, 0o755)
    yield __import__("pathlib").Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def private(tmp_path):
    """Where a distrusted cache's builds go: TMPDIR for the subprocesses."""
    d = tmp_path / "tmpdir"
    d.mkdir(mode=0o700)
    return {"TMPDIR": str(d), "XDG_RUNTIME_DIR": ""}


def plant(shared, cache, user):
    """As the second user: replaces the cache's library by the planted one,
    with a manifest that records its true size and SHA-256."""
    script = textwrap.dedent("""\
        import hashlib, json, os, shutil, sys
        cache, evil = sys.argv[1], sys.argv[2]
        for entry in os.listdir(cache):
            folder = os.path.join(cache, entry)
            deps = os.path.join(folder, "deps.json")
            if not os.path.exists(deps):
                continue
            with open(deps, "rb") as f:  # the manifest's first line is its head
                head, nl, tail = f.read().partition(b"\\n")
            rec = json.loads(head)
            lib = os.path.join(folder, rec["file"])
            os.rename(lib, lib + ".old")
            shutil.copy(evil, lib)
            data = open(lib, "rb").read()
            rec.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
            os.rename(deps, deps + ".old")
            with open(deps, "wb") as f:
                f.write(json.dumps(rec).encode() + nl + tail)
            print("planted", lib)
    """)
    r = run(script, cache, shared["evil"], user=user.pw_uid, python=user_python(user))
    assert "planted" in r.stdout, r.stdout + r.stderr


def test_world_writable_cache_is_not_used(shared, user, private, open_tmp):
    cache = open_tmp / "ww"
    built(build(shared["header"], cache, **private))
    for d, dirs, files in os.walk(cache):  # as an old bindthem left it under umask 000
        for n in dirs + files:
            os.chmod(os.path.join(d, n), 0o777)
    os.chmod(cache, 0o777)
    plant(shared, cache, user)
    r = build(shared["header"], cache, **private)
    path = built(r)  # the planted code subtracts: RESULT proves it did not run
    assert not os.path.exists(shared["sentinel"])
    assert "is not used: it is writable by every user" in r.stderr and str(cache) in r.stderr
    assert path.startswith(private["TMPDIR"] + "/bindthem-0/")
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_cache_owned_by_another_user_is_not_used_by_root(shared, user, private, open_tmp,
                                                          tmp_path):
    # sudo without -H: root's HOME is the user's, and so is ~/.cache/bindthem
    home = open_tmp / "home"
    home.mkdir()
    cache = home / ".cache" / "bindthem"
    built(build(shared["header"], cache, **private))
    subprocess.run(["chown", "-R", "%d" % user.pw_uid, str(home)], check=True)
    plant(shared, cache, user)
    r = build(shared["header"], cache, **private)
    path = built(r)
    assert not os.path.exists(shared["sentinel"])
    assert "it is owned by user %s" % user.pw_name in r.stderr and str(cache) in r.stderr
    assert r.stderr.count("is not used") == 1  # said once
    assert path.startswith(private["TMPDIR"])
    # a foreign library inside root's own cache is not loaded either: rebuilt
    own = tmp_path / "own"
    lib = built(build(shared["header"], own, **private))
    os.chown(lib, user.pw_uid, -1)
    assert built(build(shared["header"], own, **private)) == lib
    assert os.stat(lib).st_uid == 0


def test_private_fallback_taken_by_another_user(shared, user, open_tmp):
    private = {"TMPDIR": str(open_tmp / "tmpdir"), "XDG_RUNTIME_DIR": ""}
    os.mkdir(private["TMPDIR"])
    os.chmod(private["TMPDIR"], 0o1777)
    squat = os.path.join(private["TMPDIR"], "bindthem-0")
    run("import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)", squat,
        user=user.pw_uid, python=user_python(user))
    assert os.stat(squat).st_uid == user.pw_uid
    cache = open_tmp / "ww"
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    r = build(shared["header"], cache, **private)
    path = built(r)
    assert not path.startswith(squat + "/") and "is taken by another user" in r.stderr
    assert os.listdir(squat) == []


def test_read_only_cache_owned_by_root_serves_a_second_user(shared, user, private, open_tmp):
    python = user_python(user, need_bindthem=True)
    cache = open_tmp / "system"
    lib = built(build(shared["header"], cache, **private))
    subprocess.run(["chmod", "-R", "a-w,a+rX", str(cache)], check=True)
    before = tree(cache)
    other = tempfile.mkdtemp(prefix="bt-user-tmp-")
    os.chown(other, user.pw_uid, -1)
    try:
        r = build(shared["header"], cache, user=user.pw_uid, TMPDIR=other, XDG_RUNTIME_DIR="",
                  python=python)
        assert built(r) == lib and "Warning" not in r.stderr
        assert tree(cache) == before
        assert os.listdir(other) == []  # nothing built, no private cache made
        # a miss (other flags) builds into the user's private cache
        r = build(shared["header"], cache, user=user.pw_uid, TMPDIR=other,
                  XDG_RUNTIME_DIR="", options="{'cxxflags': '-O1'}", python=python)
        assert built(r).startswith(other + "/bindthem-%d/" % user.pw_uid)
        assert tree(cache) == before
    finally:
        shutil.rmtree(other, ignore_errors=True)


@pytest.fixture
def mount_point(tmp_path):
    points = []

    def make(*args):
        p = tmp_path / ("mnt%d" % len(points))
        p.mkdir()
        r = subprocess.run(["mount", *args, str(p)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip("cannot mount here: %s" % r.stderr.strip())
        points.append(p)
        return p

    yield make
    for p in reversed(points):
        subprocess.run(["umount", "-l", str(p)], capture_output=True)


def test_read_only_mount_serves_hits_without_a_lock_file(shared, private, tmp_path,
                                                         mount_point):
    cache = tmp_path / "layer"
    lib = built(build(shared["header"], cache, **private))
    for name in os.listdir(cache):
        if name != "compilers":  # a group of entries, not an entry (compiler identities)
            os.unlink(cache / name / ".lock")  # a container layer made without one
    ro = mount_point("--bind", str(cache))
    subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
    before = tree(ro)
    r = build(shared["header"], ro, **private)
    assert built(r) == lib.replace(str(cache), str(ro)) and "Warning" not in r.stderr
    assert tree(ro) == before and os.listdir(private["TMPDIR"]) == []
    r = build(shared["header"], ro, options="{'cxxflags': '-O1'}", **private)
    assert built(r).startswith(private["TMPDIR"] + "/bindthem-0/")


def test_planted_symlinks_are_never_followed(shared, fast, private, tmp_path):
    fast_env = dict(private, **fast)
    first = tmp_path / "first"
    lib = built(build(shared["header"], first, **fast_env))
    entry, libname = os.path.basename(os.path.dirname(lib)), os.path.basename(lib)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("precious\n")
    shutil.copytree(first / entry, outside / "entry")  # a valid-looking entry elsewhere
    snapshot = tree(outside)
    names = [".lock", "deps.json", "deps.json.tmp", ".deps.json.tmp1", libname,
             libname + ".tmp1", ".build-x", "k.cpp", "k.d", "k.so"]
    for i, name in enumerate(names):
        for built_first in (False, True):  # an empty entry, and a hit
            cache = tmp_path / ("c%d%d" % (i, built_first))
            if built_first:
                shutil.copytree(first, cache)
                os.unlink(cache / entry / name) if os.path.lexists(cache / entry / name) \
                    else None
            else:
                (cache / entry).mkdir(parents=True, mode=0o700)
            os.symlink(victim, cache / entry / name)
            path = built(build(shared["header"], cache, **fast_env))
            assert path == str(cache / entry / libname)
            assert not os.path.islink(path) and not os.path.islink(cache / entry / "deps.json")
            assert victim.read_text() == "precious\n" and tree(outside) == snapshot, name
    # the entry folder itself, and the sources/ folder of unpickling
    cache = tmp_path / "c-entry"
    cache.mkdir(mode=0o700)
    os.symlink(outside / "entry", cache / entry)
    assert built(build(shared["header"], cache, **fast_env)) == str(cache / entry / libname)
    assert tree(outside) == snapshot and not os.path.islink(cache / entry)
    cache = tmp_path / "c-sources"
    cache.mkdir(mode=0o700)
    os.symlink(outside, cache / "sources")
    script = textwrap.dedent("""\
        import pickle, sys, numpy as np, bindthem
        from bindthem._services import travel
        lib = bindthem.build(sys.argv[1])
        data = pickle.dumps(lib)
        open(sys.argv[1], "a").write("// edited\\n")  # the file no longer holds the text
        travel._live.clear()
        lib2 = pickle.loads(data)
        y = np.zeros(4); lib2.axpy(np.arange(4.0), y, 2.0); print(y.tolist(), lib2.__file__)
    """)
    header = tmp_path / "p.h"
    header.write_text(KERNEL)
    r = run(script, header, env=python_env(BINDTHEM_CACHE=str(cache), **private))
    assert r.returncode == 0 and RESULT in r.stdout, r.stdout + r.stderr
    assert tree(outside) == snapshot and not os.path.islink(cache / "sources")
    assert os.path.isdir(cache / "sources")


@pytest.mark.parametrize("how", ["0", "1", "64", "4096", "half", "size-1", "flipped"])
def test_damaged_library_is_rebuilt_not_loaded(shared, fast, private, tmp_path, how):
    fast_env = dict(private, **fast)
    cache = tmp_path / "c"
    lib = built(build(shared["header"], cache, **fast_env))
    size = os.path.getsize(lib)
    if how == "flipped":
        with open(lib, "r+b") as f:
            f.seek(size // 2)
            byte = f.read(1)
            f.seek(size // 2)
            f.write(bytes([byte[0] ^ 0xFF]))
    else:
        os.truncate(lib, {"half": size // 2, "size-1": size - 1}.get(how) or int(how))
    r = build(shared["header"], cache, **fast_env)
    assert built(r) == lib and os.path.getsize(lib) == size
    r = build(shared["header"], cache, **fast_env)  # and later builds are hits
    assert built(r) == lib


def test_eight_processes_at_the_size_limit(shared, private, tmp_path):
    heads = []
    for i in range(3):
        h = tmp_path / ("k%d.h" % i)
        h.write_text(KERNEL + "int k%d(int a) { return a; }\n" % i)
        lib = built(build(h, tmp_path / "pre", **private))
        shutil.copy(lib, tmp_path / ("k%d.so" % i))
        heads.append(str(h))
    cxx = tmp_path / "fakecxx"
    cxx.write_text(FAKE_CXX)
    cxx.chmod(0o755)
    cache = tmp_path / "c"
    script = textwrap.dedent("""\
        import random, sys, numpy as np, bindthem
        heads = sys.argv[1:]
        for i in range(6):
            lib = bindthem.build(random.choice(heads))
            y = np.zeros(4); lib.axpy(np.arange(4.0), y, 2.0)
            assert list(y) == [0.0, 2.0, 4.0, 6.0], y
        print("ok")
    """)
    env = python_env(BINDTHEM_CACHE=str(cache), BINDTHEM_CACHE_SIZE="1", CXX=str(cxx),
                     **private)
    failures = []
    for _ in range(5):
        procs = [subprocess.Popen([sys.executable, "-c", script, *heads], env=env, cwd="/",
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            if p.returncode != 0 or "ok" not in out:
                failures.append(err[-2000:])
    assert failures == []


def test_evictor_whose_folder_was_replaced_leaves_the_new_build(tmp_path, monkeypatch):
    """Two evictors race for one entry: the first opens the entry's lock, the
    second removes the folder, and a build makes a new folder at the same
    path and compiles in it. The first evictor's lock is then free (it locks
    the removed folder); it must not rename and delete the new folder, whose
    build holds the new lock (seen at eight processes at the size limit as
    a compiler whose source vanished)."""
    from bindthem._services import cache
    entry = tmp_path / "k-0123"
    entry.mkdir()
    (entry / cache.LOCK).write_text("")
    held, real_flock = [], fcntl.flock

    def racing_flock(fd, how):
        if not held:  # the other evictor and the new build, between open and flock
            os.rename(entry, str(entry) + cache.REMOVED + "1-1")
            entry.mkdir()
            (entry / cache.LOCK).write_text("")
            (entry / ".build-x").mkdir()
            (entry / ".build-x" / "k.cpp").write_text("int k;\n")
            new = os.open(entry / cache.LOCK, os.O_RDONLY)
            real_flock(new, fcntl.LOCK_EX)
            held.append(new)
        return real_flock(fd, how)

    monkeypatch.setattr(fcntl, "flock", racing_flock)
    try:
        assert cache.remove_entry(str(entry)) is False
    finally:
        monkeypatch.undo()
        for fd in held:
            os.close(fd)
    assert (entry / ".build-x" / "k.cpp").read_text() == "int k;\n"
    assert cache.remove_entry(str(entry)) is True  # unheld now: removed
    assert not entry.exists()


SLOW_CXX = """\
#!/bin/sh
[ "$1" = --version ] && exec g++ --version
sleep %s
exec g++ "$@"
"""


def _slow_cxx(tmp_path, private, sleep):
    """A g++ that first sleeps `sleep` seconds, the cache tmp_path/c, and the
    environment of a build with both."""
    cxx = tmp_path / "slowcxx"
    cxx.write_text(SLOW_CXX % sleep)
    cxx.chmod(0o755)
    cache = tmp_path / "c"
    return cxx, cache, python_env(BINDTHEM_CACHE=str(cache), CXX=str(cxx), **private)


def test_sigkill_during_a_build_leaves_nothing_that_survives(shared, private, tmp_path):
    cxx, cache, env = _slow_cxx(tmp_path, private, "0.8")
    cli = [sys.executable, "-m", "bindthem", "cache"]
    for delay in (0.05, 0.4, 0.8, 1.1):
        p = subprocess.Popen([sys.executable, "-c", BUILD, shared["header"]], env=env, cwd="/",
                             start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    # an eviction killed after renaming its folder away
    dead = subprocess.Popen(["true"])
    dead.wait()
    cache.mkdir(exist_ok=True)
    trash = cache / ("k-0123.removed-%d-1" % dead.pid)
    trash.mkdir()
    (trash / "libk.so").write_bytes(b"\0" * 100000)
    size = subprocess.run(cli + ["size"], env=env, capture_output=True, text=True, cwd="/")
    assert "hold what killed processes left" in size.stdout, size.stdout + size.stderr
    listing = subprocess.run(cli + ["list"], env=env, capture_output=True, text=True, cwd="/")
    assert "removed" in listing.stdout and str(trash) in listing.stdout
    assert int(size.stdout.split()[0].split(".")[0]) >= 97  # KiB: the trash is counted
    lib = built(build(shared["header"], cache, CXX=str(cxx), **private))
    assert not trash.exists()  # the next build removed it
    assert sorted(os.listdir(os.path.dirname(lib))) == sorted(
        [".lock", "deps.json", os.path.basename(lib)])
    r = subprocess.run(cli + ["clear"], env=env, capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    assert [f for _, _, files in os.walk(cache) for f in files] == []


def test_sigkill_leftovers_are_counted_then_cleared(shared, private, tmp_path):
    cxx, cache, env = _slow_cxx(tmp_path, private, "5")
    p = subprocess.Popen([sys.executable, "-c", BUILD, shared["header"]], env=env, cwd="/",
                         start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not any(n.startswith(".build-") for _, dirs, _ in os.walk(cache) for n in dirs):
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    cli = [sys.executable, "-m", "bindthem", "cache"]
    listing = subprocess.run(cli + ["list"], env=env, capture_output=True, text=True, cwd="/")
    assert "temporary files of killed builds" in listing.stdout, listing.stdout
    r = subprocess.run(cli + ["clear"], env=env, capture_output=True, text=True, cwd="/")
    assert "removed 1 entries" in r.stdout, r.stdout + r.stderr
    assert [f for _, _, files in os.walk(cache) for f in files] == []


@pytest.mark.parametrize("free_kib", [4, 40])
def test_disk_full_is_a_build_error_naming_the_cache(shared, private, tmp_path, mount_point,
                                                     free_kib):
    disk = mount_point("-t", "tmpfs", "-o", "size=2m,mode=700", "tmpfs")
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    with open(filler, "r+b") as f:
        f.truncate(os.path.getsize(filler) - free_kib * 1024)
    cache = disk / "cache"
    r = build(shared["header"], cache, **private)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "the build cache is full" in r.stdout and str(cache) in r.stdout, r.stdout
    assert "bytes" in r.stdout or "KiB" in r.stdout
    # nothing half-written; the compiler's --version text (compilers/, written
    # whole before the build, or not at all) is no part of the failed build
    leftovers = [f for d, _, files in os.walk(cache) for f in files if f != ".lock"
                 and not os.path.relpath(d, cache).startswith("compilers")]
    assert leftovers == []
    os.unlink(filler)
    built(build(shared["header"], cache, **private))


def test_umask_000_makes_private_folders_and_files(shared, private, tmp_path):
    base = tmp_path / "b"
    base.mkdir()
    cache = base / "made" / "by" / "bindthem"
    script = textwrap.dedent("""\
        import os, pickle, sys, numpy as np, bindthem
        from bindthem._services import travel
        os.umask(0)
        lib = bindthem.build(sys.argv[1])
        data = pickle.dumps(lib)
        open(sys.argv[1], "a").write("// edited\\n")
        travel._live.clear()
        pickle.loads(data).axpy  # unpickling binds on first use: this writes sources/
        print("ok")
    """)
    header = tmp_path / "u.h"
    header.write_text(KERNEL)
    r = run(script, header, env=python_env(BINDTHEM_CACHE=str(cache), **private))
    assert r.returncode == 0, r.stderr
    for folder in (base / "made", base / "made" / "by", cache):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    modes = {p: m for p, (m, *_rest) in tree(cache).items()}
    assert any(p.startswith("sources/") for p in modes)
    for p, m in modes.items():
        if os.path.isdir(cache / p):
            assert m == 0o700, p
        else:
            assert m in (0o600, 0o700), (p, oct(m))


def test_manifest_names_outside_the_entry_are_refused(shared, fast, private, tmp_path):
    fast_env = dict(private, **fast)
    cache = tmp_path / "c"
    lib = built(build(shared["header"], cache, **fast_env))
    deps = os.path.join(os.path.dirname(lib), "deps.json")
    with open(deps, "rb") as f:  # the manifest's first line is its head
        head, nl, tail = f.read().partition(b"\n")
    rec = json.loads(head)
    shutil.copy(shared["evil"], tmp_path / "evil.so")
    for name in (str(tmp_path / "evil.so"), "../evil.so", "sub/../../evil.so"):
        rec["file"] = name
        with open(deps, "wb") as f:
            f.write(json.dumps(rec).encode() + nl + tail)
        assert built(build(shared["header"], cache, **fast_env)) == lib
        assert not os.path.exists(shared["sentinel"])
