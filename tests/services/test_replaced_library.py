"""A library replaced at its path and loaded again in the same process runs
its new code (bindthem._services.loading): glibc hands back an object already loaded
under the same name (or from the same device and inode) without reading the
file, so bindthem loads the new bytes from a private copy instead, and the
old Library keeps its own code.

Each case runs in a subprocess (a call of the old code with a changed
signature could crash). v1 and v2 differ in one constant (the same layout);
v3 changes the signature. A file is replaced by rename (what installers do)
or rewritten in place (the same inode: the old Library's text pages then show
the new bytes, as the kernel maps them, so only the new Library is checked)."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import pytest

from support import python_env

H1 = "int answer(int x);\n"
H3 = "double answer(double x, double y);\n"
SOURCES = {
    "v1": (H1, "int answer(int x) { return x + 1; }\n"),
    "v2": (H1, "int answer(int x) { return x + 2; }\n"),
    "v3": (H3, "double answer(double x, double y) { return x * y + 100.0; }\n"),
}
# answer(...) of each version, and the arguments it takes
CALL = {"v1": ((1,), 2), "v2": ((1,), 3), "v3": ((3.0, 4.0), 112.0)}

PRELUDE = """
import faulthandler, json, os, pickle, subprocess, sys
import bindthem
faulthandler.enable()
P = json.loads(sys.argv[1])
CALL = {k: (tuple(a), r) for k, (a, r) in P["call"].items()}

def check(lib, version, what):
    args, want = CALL[version]
    got = lib.answer(*args)
    assert got == want, "%s: answer%r is %r, %s's is %r" % (what, args, got, version, want)

def replace(path, version, how):
    data = open(P[version], "rb").read()
    if how == "rename":
        tmp = path + ".new"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    else:  # in place: the same inode, truncated and written
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(data)

def child(code):
    r = subprocess.run([sys.executable, "-c", code, sys.argv[1]], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r.stdout
"""


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """{version: library path, version + '.h': its header}, built by gcc."""
    if not shutil.which("gcc"):
        pytest.skip("needs gcc")
    d = tmp_path_factory.mktemp("versions")
    out = {}
    for v, (header, source) in SOURCES.items():
        (d / (v + ".h")).write_text(header)
        (d / (v + ".c")).write_text(source)
        lib = str(d / ("lib%s.so" % v))
        subprocess.run(["gcc", "-O1", "-fPIC", "-shared", str(d / (v + ".c")), "-o", lib],
                       check=True)
        out[v], out[v + ".h"] = lib, str(d / (v + ".h"))
    return out


def scenario(versions, tmp_path, code, prelude="", **extra):
    """Runs PRELUDE + prelude + code in a fresh Python with P: the versions,
    a 'path' in tmp_path holding a copy of v1, and extra."""
    path = str(tmp_path / "libk.so")
    shutil.copyfile(versions["v1"], path)
    params = dict(versions, path=path, call=CALL, tmp=str(tmp_path), **extra)
    if extra.get("how") == "in_place":
        # glibc's exit runs the destructors of the object whose file changed
        # under it: that crashes with or without bindthem (ctypes too)
        code = textwrap.dedent(code) + "sys.stdout.flush()\nos._exit(0)\n"
    r = subprocess.run([sys.executable, "-c", PRELUDE + prelude + textwrap.dedent(code),
                        json.dumps(params)], capture_output=True, text=True,
                       env=python_env(), cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, "exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr[-4000:])
    return r.stdout


@pytest.mark.parametrize("how", ["rename", "in_place"])
def test_load_after_replacement_runs_the_new_code(versions, tmp_path, how):
    scenario(versions, tmp_path, """
        old = bindthem.load(P["path"], P["v1.h"], name="k")
        check(old, "v1", "the first load")
        assert bindthem.info(old).handle.path == P["path"]  # a first load is by its path
        replace(P["path"], "v2", P["how"])
        new = bindthem.load(P["path"], P["v1.h"], name="k")
        check(new, "v2", "the load after the replacement")
        assert new.__file__ == P["path"], new.__file__
        copy = bindthem.info(new).handle.path  # a sealed memfd, kept open
        assert os.readlink(copy).startswith("/memfd:bindthem:libk.so"), os.readlink(copy)
        if P["how"] == "rename":  # in place, the old mapping shows the new bytes (the kernel's)
            check(old, "v1", "the old Library")
        again = bindthem.load(P["path"], P["v1.h"], name="k")  # the same file: the same copy
        check(again, "v2", "a third load")
        assert bindthem.info(again).handle.path == bindthem.info(new).handle.path
        # its pickle carries the SHA-256 of the bytes it runs
        import hashlib
        want = hashlib.sha256(open(P["v2"], "rb").read()).hexdigest()
        assert bindthem.info(new).source.key and bindthem.info(new).source.library_hash == want
        """, how=how)


def test_load_with_a_changed_signature_runs_the_new_code(versions, tmp_path):
    scenario(versions, tmp_path, """
        old = bindthem.load(P["path"], P["v1.h"], name="k")
        check(old, "v1", "the first load")
        replace(P["path"], "v3", "rename")
        new = bindthem.load(P["path"], P["v3.h"], name="k")
        check(new, "v3", "the load of the new signature")
        check(old, "v1", "the old Library")
        """)


def test_a_library_someone_else_loaded_is_not_taken_for_its_replacement(versions, tmp_path):
    scenario(versions, tmp_path, """
        import ctypes
        ctypes.CDLL(P["path"])  # v1, loaded by another part of the process
        replace(P["path"], "v2", "rename")
        check(bindthem.load(P["path"], P["v1.h"], name="k"), "v2", "the load")
        """)


PICKLE_LOAD = """
import bindthem, json, pickle, sys
P = json.loads(sys.argv[1])
lib = bindthem.load(P["path"], P[P["header"]], name="k")
sys.stdout.buffer.write(pickle.dumps(lib))
"""


@pytest.mark.parametrize("how", ["rename", "in_place"])
def test_unpickling_binds_the_new_file_it_hashed(versions, tmp_path, how):
    """A pickle of the new file binds its code, though this process maps the
    old one under that name; a pickle of the old file's SHA-256 alone is
    refused (the existing error), whether or not the process maps it; one
    that carries the old file's bytes runs them."""
    scenario(versions, tmp_path, """
        PICKLER = P["pickler"].replace('P[P["header"]]', 'P["v1.h"]')
        of_v1 = child(PICKLER)  # v1's SHA-256 and bytes
        os.environ["BINDTHEM_CARRY_LIBRARY"] = "0"
        of_v1_path = child(PICKLER)  # v1's SHA-256 alone
        del os.environ["BINDTHEM_CARRY_LIBRARY"]
        old = bindthem.load(P["path"], P["v1.h"], name="k")
        check(old, "v1", "the first load")
        replace(P["path"], "v2", P["how"])
        new = pickle.loads(child(PICKLER))  # made where the new file was loaded: v2's SHA-256
        check(new, "v2", "the unpickled Library")
        assert new.__file__ == P["path"], new.__file__
        if P["how"] == "rename":
            check(old, "v1", "the old Library")
        try:
            pickle.loads(of_v1_path).answer(1)
        except bindthem.BindError as e:
            assert "is not the one pickled" in str(e), e
        else:
            raise AssertionError("a pickle of v1 bound the replaced file")
        # one that carries v1's bytes runs v1, from a copy, never the replaced file (in a
        # process of its own: the same key as the refused one, whose error this one keeps)
        open(os.path.join(P["tmp"], "v1.pkl"), "wb").write(of_v1)
        out = child("import bindthem, json, os, pickle, sys; P = json.loads(sys.argv[1]); "
                    "lib = pickle.loads(open(os.path.join(P['tmp'], 'v1.pkl'), 'rb').read()); "
                    "print(lib.answer(1), '/carried/' in lib.__file__)")
        assert out.split() == [b"2", b"True"], out
        """, how=how, pickler=PICKLE_LOAD)


def test_unpickling_with_a_changed_signature_binds_the_new_code(versions, tmp_path):
    scenario(versions, tmp_path, """
        old = bindthem.load(P["path"], P["v1.h"], name="k")
        replace(P["path"], "v3", "rename")
        new = pickle.loads(child(P["pickler"].replace('P[P["header"]]', 'P["v3.h"]')))
        check(new, "v3", "the unpickled Library")
        check(old, "v1", "the old Library")
        """, pickler=PICKLE_LOAD)


PACKAGE = """
def install(version, how):
    # the package rpkg at P["site"] with version's library, header and manifest
    from bindthem.package import write_manifest
    folder = os.path.join(P["site"], "rpkg")
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, "__init__.py"), "w").close()
    open(os.path.join(folder, "k.h"), "w").write(open(P[version + ".h"]).read())
    lib = os.path.join(folder, "libk.so")
    if not os.path.exists(lib):
        open(lib, "wb").write(open(P[version], "rb").read())
    else:
        replace(lib, version, how)
    write_manifest(folder, "k.h", None, module="rpkg.k", flags=[], strict=False,
                   header_path=os.path.join(folder, "k.h"), instantiate_path=None)

sys.path.insert(0, P["site"])
PICKLER = '''
import json, pickle, sys
P = json.loads(sys.argv[1])
sys.path.insert(0, P["site"])
import bindthem
sys.stdout.buffer.write(pickle.dumps(bindthem.load_package("rpkg", "k.h")))
'''
"""


@pytest.mark.parametrize("how", ["rename", "in_place"])
@pytest.mark.parametrize("version", ["v2", "v3"])
def test_load_package_after_an_upgrade_runs_the_new_code(versions, tmp_path, how, version):
    scenario(versions, tmp_path, prelude=PACKAGE, code="""
        install("v1", None)
        old = bindthem.load_package("rpkg", "k.h")
        check(old, "v1", "the first load_package")
        install(P["version"], P["how"])
        new = bindthem.load_package("rpkg", "k.h")
        check(new, P["version"], "load_package after the upgrade")
        assert new.__file__ == os.path.join(P["site"], "rpkg", "libk.so"), new.__file__
        if P["how"] == "rename":
            check(old, "v1", "the old Library")
        """, site=str(tmp_path / "site"), how=how, version=version)


@pytest.mark.parametrize("how", ["rename", "in_place"])
def test_unpickling_a_package_after_an_upgrade_runs_the_new_code(versions, tmp_path, how):
    scenario(versions, tmp_path, prelude=PACKAGE, code="""
        install("v1", None)
        old = bindthem.load_package("rpkg", "k.h")
        install("v2", P["how"])
        new = pickle.loads(child(PICKLER))  # pickled by a process that loaded v2
        check(new, "v2", "the unpickled package Library")
        if P["how"] == "rename":
            check(old, "v1", "the old Library")
        """, site=str(tmp_path / "site"), how=how)


def test_load_package_checks_the_bytes_it_maps_once_per_file(versions, tmp_path):
    """A second load_package of the unchanged file neither hashes nor copies it again."""
    scenario(versions, tmp_path, prelude=PACKAGE, code="""
        from bindthem._services import loading as _loading
        install("v1", None)
        a = bindthem.load_package("rpkg", "k.h")
        hashed = _loading.hashed_bytes()
        b = bindthem.load_package("rpkg", "k.h")
        assert _loading.hashed_bytes() == hashed, (hashed, _loading.hashed_bytes())
        assert bindthem.info(a).handle.path == bindthem.info(b).handle.path == a.__file__
        check(b, "v1", "the second load")
        """, site=str(tmp_path / "site"))


def test_pickles_of_the_original_and_the_replacement_differ(versions, tmp_path):
    """In this process (no subprocess needed): the hashes a pickle carries."""
    import bindthem

    path = str(tmp_path / "libk.so")
    shutil.copyfile(versions["v1"], path)
    old = bindthem.load(path, versions["v1.h"], name="k")
    first = bindthem.info(old).source.key  # hashed now, while the file is v1
    tmp = path + ".new"
    shutil.copyfile(versions["v2"], tmp)
    os.replace(tmp, path)
    new = bindthem.load(path, versions["v1.h"], name="k")
    assert new.answer(1) == 3 and old.answer(1) == 2
    assert bindthem.info(new).source.key != first
    assert pickle.loads(pickle.dumps(new)) is new and pickle.loads(pickle.dumps(old)) is old


def test_a_replacement_between_the_hash_and_the_load_is_caught(versions, tmp_path,
                                                               monkeypatch):
    """The race: the file at the path is replaced after it was hashed, as the
    loader opens it. The object the loader mapped from the path is never
    bound; the bytes that were hashed are loaded from a copy."""
    import ctypes
    import hashlib

    from bindthem import _core
    from bindthem._services import loading as _loading

    path = str(tmp_path / "libk.so")
    shutil.copyfile(versions["v1"], path)
    v1 = hashlib.sha256(open(path, "rb").read()).hexdigest()

    class Racing:  # _core, with a replacement just before the load of the path
        @staticmethod
        def _loaded(name, load=False, fd=-1):
            if load and name == path:
                shutil.copyfile(versions["v2"], path + ".new")
                os.replace(path + ".new", path)
            return _core._loaded(name, load, fd)

    monkeypatch.setattr(_loading, "_core", Racing)
    opened = _loading.open_checked(path, v1)
    monkeypatch.undo()
    assert opened.copied and opened.sha256 == v1 and opened.name != path, opened
    assert ctypes.CDLL(opened.name).answer(1) == 2  # the copy is v1, what was hashed
    lib = bindthem_load(path, versions["v1.h"])  # the object mapped in the race is not taken
    assert lib.answer(1) == 3 and bindthem_info(lib).handle.path not in (path, opened.name)


def test_the_core_tells_which_object_a_path_finds_and_whether_it_is_a_file(versions, tmp_path):
    from bindthem import _core

    path = str(tmp_path / "libk.so")
    shutil.copyfile(versions["v1"], path)
    assert _core._loaded(path) is None  # nothing loaded: nothing loaded by asking
    obj, same = _core._loaded(path, load=True)
    assert same is None and _core._loaded(path) == (obj, None)
    with open(path, "rb") as mine, open(versions["v2"], "rb") as other:
        assert _core._loaded(path, fd=mine.fileno()) == (obj, True)
        assert _core._loaded(path, fd=other.fileno()) == (obj, False)
    assert _core._loaded(versions["v3"]) is None


def bindthem_load(path, header):
    import bindthem

    return bindthem.load(path, header, name="k")


def bindthem_info(lib):
    import bindthem

    return bindthem.info(lib)


@pytest.mark.parametrize("why", ["memfds_kept", "memfd_noexec"])
def test_a_copy_falls_back_to_a_private_temporary_file(versions, tmp_path, why):
    """After MEMFDS_KEPT memfds (one descriptor each), or where a memfd
    cannot be mapped executable, the copy is a file in a private folder."""
    out = scenario(versions, tmp_path, """
        from bindthem import _core
        from bindthem._services import loading as _loading
        if P["why"] == "memfds_kept":
            _loading.MEMFDS_KEPT = 0
        else:
            class NoExec:
                @staticmethod
                def _loaded(name, load=False, fd=-1):
                    if load and name.startswith("/proc/"):
                        raise OSError("cannot load library: failed to map segment")
                    return _core._loaded(name, load, fd)
            _loading._core = NoExec
        old = bindthem.load(P["path"], P["v1.h"], name="k")
        replace(P["path"], "v2", "rename")
        new = bindthem.load(P["path"], P["v1.h"], name="k")
        check(new, "v2", "the copy")
        check(old, "v1", "the old Library")
        copy = bindthem.info(new).handle.path
        folder = os.path.dirname(copy)
        assert os.path.basename(copy) == "libk.so" and folder != P["tmp"], copy
        assert os.stat(folder).st_mode & 0o777 == 0o700, oct(os.stat(folder).st_mode)
        assert os.stat(copy).st_mode & 0o777 == 0o500, oct(os.stat(copy).st_mode)
        links = []
        for f in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink("/proc/self/fd/" + f))
            except OSError:  # listdir's own descriptor, closed since
                pass
        assert not [x for x in links if x.startswith("/memfd:bindthem")], links
        print(folder)
        """, why=why)
    assert not os.path.exists(out.strip()), "the copy's folder outlived its process"
