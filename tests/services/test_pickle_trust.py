"""Pickles tried as an attacker would: forged and mutated pickles of a
genuine kernel (every Source field, and byte flips of the stream) are
unpickled in subprocesses, none crashes and none binds changed code; a
forgery cannot poison the table a later genuine pickle binds from; carried
names are confined and carried paths that are read must be regular files."""

import json
import os
import pickle
import random
import subprocess
import sys
import time

import pytest

from support import python_env

import bindthem
from bindthem import _unpickle
from bindthem._services import travel as _travel

HEADER = b"""#include "detail/offset.h"
// y += a*x.
template <class T>
void axpy(const T a, const T x[], const int x_size, T y[], const int y_size)
{ for (int i = 0; i < x_size; i++) y[i] += a * x[i]; }
// OFFSET, from a local include.
int offset() { return OFFSET; }
"""
YAML = b"- types: [[double]]\n  functions: [axpy]\n"
GENUINE = [[1.0, 3.0, 5.0, 7.0], 100]  # axpy(2, arange(4), ones(4)), offset()


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    """A built kernel's pickle (of axpy), its Source fields, and its cache."""
    d = tmp_path_factory.mktemp("trust")
    (d / "proj" / "detail").mkdir(parents=True)
    (d / "proj" / "detail" / "offset.h").write_bytes(b"#define OFFSET 100\n")
    (d / "proj" / "travel.h").write_bytes(HEADER)
    (d / "proj" / "travel.yml").write_bytes(YAML)
    cache = d / "cache"
    cache.mkdir()
    lib = bindthem.build(str(d / "proj" / "travel.h"), str(d / "proj" / "travel.yml"),
                         cache_dir=str(cache))
    data = pickle.dumps(lib.axpy)
    return {"data": data, "fields": fields_of(lib), "dir": d, "cache": str(cache), "lib": lib}


def fields_of(lib):
    return dict(bindthem.info(lib).source.__reduce__()[1][0])


class _Fields:
    def __init__(self, fields):
        self.fields = fields

    def __reduce__(self):
        return (_unpickle.source, (self.fields,))


class _Forged:
    """Pickles as bindthem's own function pickle does, with other fields."""

    def __init__(self, fields, name="axpy"):
        self.fields, self.name = fields, name

    def __reduce__(self):
        return (_unpickle.function, (_Fields(self.fields), self.name))


def forge(fields, rehash=False, **changes):
    """A pickle of fields with changes; rehash: with the key of what it then
    carries (a consistent forgery of the source, which carries no library:
    one built from the genuine source is refused, test_carried_library.py)."""
    f = dict(fields, **changes)
    if rehash:
        f.setdefault("binary", None)
        if "binary" not in changes:
            f["binary"] = None
        src = _travel.Source(**f)
        src._key = None
        f["key"] = src._digest()
    return pickle.dumps(_Forged(f))


CHILD = """
import json, pickle, sys, time
import numpy as np
results = []
for data in pickle.load(open(sys.argv[1], "rb")):
    try:
        f = pickle.loads(data)
    except Exception as e:
        results.append(["loads", type(e).__name__, str(e)[:300]])
        continue
    try:
        y = np.ones(4)
        f(2.0, np.arange(4.0), y)
        results.append(["ok", [y.tolist(), f.library.offset()]])
    except Exception as e:
        results.append(["use", type(e).__name__, str(e)[:300]])
json.dump(results, open(sys.argv[2], "w"))
"""


def run_batch(tmp_path, pickles, tag, **env):
    """Unpickles and calls each pickle in one fresh interpreter; its outcomes.
    A crash (a signal, a non-zero exit) fails the test."""
    src, out = tmp_path / ("in-%s.pkl" % tag), tmp_path / ("out-%s.json" % tag)
    with open(src, "wb") as f:
        pickle.dump(pickles, f)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(out)],
                          capture_output=True, env=python_env(**env), timeout=300)
    assert proc.returncode == 0, "the child died (%d): %s" % (
        proc.returncode, proc.stderr.decode(errors="replace")[-3000:])
    with open(out) as f:
        return json.load(f)


def field_mutations(g, cache):
    """(label, pickle, must be refused by pickle.loads with PickleError);
    all with cache_dir=cache (outside the hash: the genuine key holds)."""
    f = dict(g["fields"], cache_dir=cache)
    text = f["header_text"]
    out = []
    rng = random.Random(22)
    for i in range(40):  # one byte of the header's text changed, its key kept
        pos = rng.randrange(len(text))
        flipped = text[:pos] + bytes([text[pos] ^ rng.randrange(1, 256)]) + text[pos + 1:]
        out.append(("header byte %d" % pos, forge(f, header_text=flipped), True))
    out += [
        ("header += to -=", forge(f, header_text=text.replace(b"+=", b"-=")), True),
        ("header truncated", forge(f, header_text=text[:-20]), True),
        ("header appended", forge(f, header_text=text + b"int more() { return 1; }\n"), True),
        ("header empty", forge(f, header_text=b""), True),
        ("header as str", forge(f, header_text=text.decode()), True),
        ("header as bytearray", forge(f, header_text=bytearray(text)), True),
        ("header None", forge(f, header_text=None), True),
        ("header int", forge(f, header_text=7), True),
        ("header list", forge(f, header_text=[text]), True),
        ("header huge", forge(f, header_text=b" " * (_travel.TEXT_LIMIT + 1)), True),
        ("yaml float", forge(f, yaml_text=YAML.replace(b"double", b"float")), True),
        ("yaml more", forge(f, yaml_text=YAML + b"- types: [[float]]\n  functions: [axpy]\n"),
         True),
        ("yaml empty", forge(f, yaml_text=b""), True),
        ("yaml None", forge(f, yaml_text=None), True),
        ("yaml str", forge(f, yaml_text=YAML.decode()), True),
        ("yaml without path", forge(f, instantiate=None), True),
        ("no yaml at all", forge(f, instantiate=None, yaml_text=None), True),
    ]
    inc = "detail/offset.h"
    for label, files in [
        ("include changed", {inc: b"#define OFFSET 7\n"}),
        ("include removed", {}),
        ("include added", {inc: b"#define OFFSET 100\n", "more.h": b"int x;\n"}),
        ("include ../", {"../offset.h": b"#define OFFSET 100\n"}),
        ("include ../ deep", {"detail/../../x.h": b""}),
        ("include absolute", {"/tmp/offset.h": b""}),
        ("include NUL", {"detail/off\0set.h": b""}),
        ("include empty name", {"": b""}),
        ("include dot", {".": b""}),
        ("include trailing slash", {"detail/": b""}),
        ("include double slash", {"detail//offset.h": b""}),
        ("include backslash", {"detail\\..\\..\\x.h": b""}),
        ("include over the header", {"travel.h": b"int evil();\n"}),
        ("include over a folder", {inc: b"", "detail": b""}),
        ("include str text", {inc: "#define OFFSET 100\n"}),
        ("include int name", {3: b""}),
        ("include surrogate name", {"d\udcffx.h": b""}),
    ]:
        out.append((label, forge(f, files=files), True))
    out += [("files list", forge(f, files=[[inc, b""]]), True),
            ("files None", forge(f, files=None), True),
            ("files many", forge(f, files={"f%d.h" % i: b"" for i in range(10001)}), True)]
    for label, flags in [("flag added", ["-O3", "-DOFFSET=1"]), ("flags empty", []),
                         ("flag -O0", ["-O0"]), ("flags str", "-O3"), ("flags tuple", ("-O3",)),
                         ("flags None", None), ("flag int", [3]), ("flag NUL", ["-O3\0"]),
                         ("flag empty", [""]), ("flag nested", [["-O3"]])]:
        out.append((label, forge(f, flags=flags), True))
    for label, opts in [("gil release", {"gil": "release", "copy_const": False}),
                        ("copy_const", {"gil": "auto", "copy_const": True}),
                        ("gil bogus", {"gil": "never", "copy_const": False}),
                        ("copy_const int", {"gil": "auto", "copy_const": 1}),
                        ("options extra", {"gil": "auto", "copy_const": False, "x": 1}),
                        ("options missing", {"gil": "auto"}), ("options None", None),
                        ("options list", [("gil", "auto")]),
                        ("gil dict", {"gil": {"axpy": "keep"}, "copy_const": False}),
                        ("gil dict bogus", {"gil": {"axpy": 3}, "copy_const": False}),
                        ("gil dict key", {"gil": {("a",): "keep"}, "copy_const": False})]:
        out.append((label, forge(f, options=opts), True))
    for label, name in [("name other", "other"), ("name ../", "../x"), ("name empty", ""),
                        ("name slash", "a/b"), ("name NUL", "a\0b"), ("name int", 5),
                        ("name None", None), ("name long", "x" * 256),
                        ("name newline", "a\nb"), ("name bytes", b"travel")]:
        out.append((label, forge(f, name=name), True))
    for label, kind in [("kind load", "load"), ("kind cuda", "cuda"), ("kind other", "other"),
                        ("kind None", None), ("kind bytes", b"build")]:
        out.append((label, forge(f, kind=kind), True))
    for label, strict in [("strict True", True), ("strict int", 1), ("strict str", "no"),
                          ("strict None", None)]:
        out.append((label, forge(f, strict=strict), True))
    for label, cxx in [("cxx g++", "g++"), ("cxx sh", "/bin/sh -c true"), ("cxx int", 3),
                       ("cxx NUL", "c++\0"), ("cxx empty", "")]:
        out.append((label, forge(f, cxx=cxx), True))
    key = f["key"]
    for label, k in [("key other", "0" * 64), ("key upper", key.upper()), ("key short", key[:-1]),
                     ("key long", key + "0"), ("key int", 5), ("key bytes", key.encode()),
                     ("key None", None), ("key flipped", key[:10] + "f0"[key[10] == "f"] +
                                          key[11:])]:
        out.append((label, forge(f, key=k), True))
    for label, changes in [
        ("header path relative", {"header": "travel.h"}),
        ("header path NUL", {"header": "/tmp/tra\0vel.h"}),
        ("header path ..", {"header": "/tmp/x/.."}),
        ("header path /", {"header": "/"}),
        ("header path int", {"header": 3}),
        ("header path backslash", {"header": "/tmp/..\\travel.h"}),
        ("yaml path ..", {"instantiate": "/tmp/.."}),
        ("yaml path relative", {"instantiate": "travel.yml"}),
        ("library on a build", {"library": "/lib/libc.so.6"}),
        ("library hash on a build", {"library_hash": "0" * 64}),
        ("image on a build", {"image": b"\x7fELF"}),
        ("cache_dir int", {"cache_dir": 3}),
        ("cache_dir NUL", {"cache_dir": "/tmp/\0"}),
    ]:
        out.append((label, forge(f, **changes), True))
    missing = dict(f)
    del missing["files"]
    out += [("field missing", pickle.dumps(_Forged(missing)), True),
            ("field extra", pickle.dumps(_Forged(dict(f, extra=1))), True),
            ("fields list", pickle.dumps(_Forged(list(f.items()))), True),
            ("fields None", pickle.dumps(_Forged(None)), True),
            ("function name other", pickle.dumps(_Forged(f, "nothere")), False),
            ("function name dunder", pickle.dumps(_Forged(f, "__file__")), False),
            ("function name int", pickle.dumps(_Forged(f, 3)), True),
            ("function name path", pickle.dumps(_Forged(f, "../axpy")), True)]
    # fields outside the hash, changed: accepted, and still the genuine code
    out += [("header path elsewhere", forge(f, header="/nonexistent/travel.h"), False),
            ("header path /dev/zero", forge(f, header="/dev/zero"), False),
            ("yaml path /dev/zero", forge(f, instantiate="/dev/zero"), False),
            ("cache_dir elsewhere", forge(f, cache_dir="/nonexistent/cache"), False)]
    return out


def stream_flips(data, n=80):
    rng = random.Random(23)
    out = []
    for _ in range(n):
        pos = rng.randrange(len(data))
        out.append(("stream byte %d" % pos,
                    data[:pos] + bytes([data[pos] ^ rng.randrange(1, 256)]) + data[pos + 1:],
                    False))
    out += [("stream truncated %d" % k, data[:k], False) for k in (1, 50, len(data) // 2, -1)]
    return out


def test_mutated_pickles_neither_crash_nor_bind_changed_code(genuine, tmp_path):
    cache = tmp_path / "child-cache"
    cache.mkdir()
    cases = field_mutations(genuine, str(cache)) + stream_flips(genuine["data"])
    assert len(cases) >= 200
    results = []
    for i in range(0, len(cases), 80):  # a few processes, many pickles each
        batch = cases[i:i + 80]
        results += run_batch(tmp_path, [c[1] for c in batch], str(i), BINDTHEM_CACHE=str(cache))
    assert len(results) == len(cases)
    accepted = refused = 0
    for (label, _, must_refuse), res in zip(cases, results):
        if res[0] == "ok":
            assert res[1] == GENUINE, "%s bound other code: %r" % (label, res)
            assert not must_refuse, "%s was accepted" % label
            accepted += 1
        else:
            refused += 1
            if must_refuse:
                assert res[:2] == ["loads", "PickleError"], (label, res)
    # the only carried text written is the genuine kernel's (the first accepted
    # pickle binds it; from its own files when its path holds them, else from
    # copies in a sources/ entry, which has the .lock and .used of every group
    # entry: a flipped byte of the header's path is accepted and writes them)
    key = genuine["fields"]["key"][:24]
    written = sorted(os.path.relpath(os.path.join(d, n), cache)
                     for d, _, names in os.walk(cache / "sources") for n in names)
    assert set(written) <= {os.path.join("sources", key, p) for p in (
        ".lock", ".used", "src/detail/offset.h", "src/travel.h", "yml/travel.yml")}, written
    stray = [n for n in ("x.h", "offset.h", "more.h", "f0.h") for d in (tmp_path, cache, "/tmp")
             if os.path.exists(os.path.join(d, n))]
    assert stray == []
    print("%d mutated pickles: %d refused, %d bound the genuine code" % (len(cases), refused,
                                                                        accepted))


def test_messages_name_what_differs(genuine):
    f = genuine["fields"]
    with pytest.raises(bindthem.PickleError) as e:
        pickle.loads(forge(f, header_text=f["header_text"].replace(b"+=", b"-=")))
    assert isinstance(e.value, pickle.UnpicklingError) and isinstance(e.value, bindthem.BindError)
    assert ("the pickle's key %s... is not the hash of what it carries" % f["key"][:16]
            ) in str(e.value)
    for files, shown in [({"../x.h": b""}, "'../x.h'"), ({"/etc/x.h": b""}, "'/etc/x.h'"),
                         ({"a\0b": b""}, r"'a\x00b'")]:
        with pytest.raises(bindthem.PickleError, match="a local include's path is %s, not a "
                           "relative path of plain names inside the header's folder|a local "
                           "include's path is %s, not a non-empty string without NUL"
                           % (shown.replace("\\", "\\\\"), shown.replace("\\", "\\\\"))):
            pickle.loads(forge(f, rehash=True, files=files))
    with pytest.raises(bindthem.PickleError, match=r"its name is '\.\./x', not a module name"):
        pickle.loads(forge(f, rehash=True, name="../x"))


POISON = """
import pickle, sys
import numpy as np
forged_kept, forged_own, genuine = pickle.load(open(sys.argv[1], "rb"))
try:
    pickle.loads(forged_kept)
    print("forged accepted")
except pickle.UnpicklingError as e:
    print("refused", type(e).__name__)
g = pickle.loads(forged_own)
y = np.ones(4); g(2.0, np.arange(4.0), y); print("forged-own", y.tolist())
f = pickle.loads(genuine)
y = np.ones(4); f(2.0, np.arange(4.0), y); print("genuine", y.tolist())
"""


def test_a_forgery_cannot_poison_a_later_genuine_pickle(genuine, tmp_path):
    f = genuine["fields"]
    minus = f["header_text"].replace(b"+=", b"-=")
    batch = tmp_path / "poison.pkl"
    with open(batch, "wb") as fh:
        # the attack: -= with the genuine key kept; and a consistent
        # forgery (its own key), unpickled before the genuine pickle
        pickle.dump([forge(f, header_text=minus), forge(f, rehash=True, header_text=minus),
                     genuine["data"]], fh)
    proc = subprocess.run([sys.executable, "-c", POISON, str(batch)], capture_output=True,
                          text=True, env=python_env(BINDTHEM_CACHE=str(tmp_path / "c")),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["refused PickleError", "forged-own [1.0, -1.0, -3.0, -5.0]",
                                        "genuine [1.0, 3.0, 5.0, 7.0]"]


SPECIAL = """
import json, pickle, sys, time
import numpy as np
from bindthem import _unpickle
_unpickle.function = lambda source, name: source  # each case its own checked Source
out = []
for label, data in pickle.load(open(sys.argv[1], "rb")):
    t = time.perf_counter()
    try:
        src = pickle.loads(data)
        same = src._same_on_disk() if src.kind == "build" else None
        if src.kind == "load":
            y = np.ones(4); _unpickle.bind(src).axpy(2.0, np.arange(4.0), y)
        res = ["ok", same]
    except Exception as e:
        res = [type(e).__name__, str(e)[:400]]
    out.append([label, time.perf_counter() - t] + res)
json.dump(out, open(sys.argv[2], "w"))
"""


def test_special_files_at_carried_paths_are_refused_at_once(genuine, tmp_path):
    from sources import compile_cxx

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proj = tmp_path / "p"
    (proj / "detail").mkdir(parents=True)
    (proj / "travel.h").write_bytes(HEADER)
    os.mkfifo(proj / "detail" / "offset.h")  # the header is genuine, its include a FIFO
    so = compile_cxx(str(tmp_path), "travel", str(genuine["dir"] / "proj" / "travel.h"),
                     str(genuine["dir"] / "proj" / "travel.yml"))
    loaded = bindthem.load(so, str(genuine["dir"] / "proj" / "travel.h"),
                           str(genuine["dir"] / "proj" / "travel.yml"))
    lf = fields_of(loaded)
    f = genuine["fields"]
    cases = [("header /dev/zero", forge(f, header="/dev/zero")),
             ("header FIFO", forge(f, header=str(fifo))),
             ("yaml FIFO", forge(f, instantiate=str(fifo))),
             ("include FIFO", forge(f, header=str(proj / "travel.h"))),
             ("header folder", forge(f, header=str(tmp_path))),
             # without the library's bytes (BINDTHEM_CARRY_LIBRARY=0), the path is all
             ("library /dev/zero", forge(lf, library="/dev/zero", binary=None)),
             ("library FIFO", forge(lf, library=str(fifo), binary=None)),
             ("library folder", forge(lf, library=str(tmp_path), binary=None)),
             ("library genuine", pickle.dumps(loaded.axpy))]
    src, out = tmp_path / "special.pkl", tmp_path / "special.json"
    with open(src, "wb") as fh:
        pickle.dump([(label, data) for label, data in cases], fh)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", SPECIAL, str(src), str(out)],
                          capture_output=True, text=True, env=python_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    with open(out) as fh:
        res = {r[0]: r[1:] for r in json.load(fh)}
    for label in ("header /dev/zero", "header FIFO", "yaml FIFO", "include FIFO",
                  "header folder"):
        assert res[label][1:] == ["ok", False], (label, res[label])  # not the same: carried text
    for label, kind in [("library /dev/zero", "a device or socket"), ("library FIFO", "a FIFO"),
                        ("library folder", "a folder")]:
        assert res[label][1] == "BindError", (label, res[label])
        assert "not a regular file (%s)" % kind in res[label][2], res[label]
    assert res["library genuine"][1:] == ["ok", None]
    assert all(r[0] < 1.0 for r in res.values()), res
    print("special paths refused in %.2f s (all nine, one process)" % (time.perf_counter() - t))
