"""Enums through a call: an enum parameter takes an integer of the enum's C
type that is one of its members' values (for a flags enum, any OR of its
members), else a ValueError naming the parameter, the enum and its members;
an enum return is a plain int. On both call paths (direct, with the fused
entry, and libffi); the metadata's enums and constants; C++ names mangled
with the enum's name."""

import enum
import re
import subprocess

import numpy as np
import pytest
from cuda_support import launches

from sources import CXX, c_library
from support import untyped

import bindthem
from bindthem import _core

HEADER = """\
#define LIMIT 42
#define NEG_LIMIT (-(LIMIT) * 2)
#define GREETING "hi there"
#ifdef __cplusplus
extern "C" {
#endif
/* Values that are no range: RED, GREEN, BLUE are 0, 5, 6. */
enum color { RED, GREEN = 5, BLUE };
/* One range, 1 to 3. */
typedef enum size { SMALL = 1, MEDIUM, LARGE } size;
/* One range with a negative value. */
typedef enum { BELOW = -1, AT, ABOVE } level;
/* Flags that fill their bits: any OR is 0 to 7. */
enum perm { READ = 1, WRITE = 2, EXEC = 4 };
/* Flags with gaps. */
enum sparse { BIT0 = 1, BIT2 = 4, BIT4 = 16 };
int paint(enum color c, int k);
int measure(size s);
int compare(level l);
unsigned grant(enum perm p);
unsigned mark(enum sparse f);
enum color pick(int i);
level sign(int x);
double scaled(const double *x, int x_size, enum color c, double w);
int shifted(int k, level l = ABOVE);
#ifdef __cplusplus
}
#endif
"""

SOURCE = """\
#include "enums.h"
int paint(enum color c, int k) { return (int)c * 10 + k; }
int measure(size s) { return (int)s; }
int compare(level l) { return (int)l; }
unsigned grant(enum perm p) { return (unsigned)p; }
unsigned mark(enum sparse f) { return (unsigned)f; }
enum color pick(int i) { return i == 0 ? RED : i == 1 ? GREEN : BLUE; }
level sign(int x) { return x < 0 ? BELOW : x > 0 ? ABOVE : AT; }
double scaled(const double *x, int x_size, enum color c, double w)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s * w + (double)c;
}
int shifted(int k, level l) { return k + (int)l; }
"""


class Color(enum.IntEnum):
    RED = 0
    GREEN = 5
    BLUE = 6


class Perm(enum.IntFlag):
    READ = 1
    WRITE = 2
    EXEC = 4


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "enums", HEADER, SOURCE, cxx=True)


@pytest.fixture(scope="module")
def enums(built):
    return bindthem.load(*built)


@pytest.fixture(params=["direct", "ffi"])
def lib(request, enums):
    old = _core.force_ffi(request.param == "ffi")
    yield enums
    _core.force_ffi(old)


def test_members_pass(lib):
    assert [lib.paint(c, 1) for c in (0, 5, 6)] == [1, 51, 61]
    assert [lib.measure(s) for s in (1, 2, 3)] == [1, 2, 3]
    assert [lib.compare(v) for v in (-1, 0, 1)] == [-1, 0, 1]
    # IntEnum members are ints; NumPy integers and a bool too
    assert lib.paint(Color.GREEN, 2) == 52 and lib.measure(np.int64(2)) == 2
    assert lib.measure(np.uint8(3)) == 3 and lib.compare(True) == 1
    assert lib.paint(c=Color.BLUE, k=0) == 60


def test_values_that_are_no_member_refused(lib):
    msg = (r"paint\(\): argument 'c' = %s is not a value of enum color, whose members are: "
           r"RED \(0\), GREEN \(5\), BLUE \(6\)$")
    for v in (1, 4, 7, -1, 2**40, np.int32(3)):
        with pytest.raises(ValueError, match=msg % re.escape(repr(v))):
            lib.paint(v, 1)
    for v in (0, 4, -5):
        with pytest.raises(ValueError, match=r"measure\(\): argument 's' = %d is not a value of "
                                             r"enum size, whose members are: SMALL \(1\), "
                                             r"MEDIUM \(2\), LARGE \(3\)" % v):
            lib.measure(v)
    for v in (-2, 2, 2**31):
        with pytest.raises(ValueError, match=r"compare\(\): argument 'l' = %d is not a value of "
                                             r"enum level" % v):
            lib.compare(v)


def test_refusal_after_a_fused_call(lib):
    """A value out of the enum's range after the same keys went the fused
    way: the quick check is the member check."""
    for _ in range(3):
        assert lib.measure(2) == 2 and lib.paint(5, 0) == 50
    with pytest.raises(ValueError, match="not a value of enum size"):
        lib.measure(4)
    with pytest.raises(ValueError, match="not a value of enum color"):
        lib.paint(3, 0)
    assert lib.measure(3) == 3


def test_flags(lib):
    assert [lib.grant(p) for p in range(8)] == list(range(8))
    assert lib.grant(Perm.READ | Perm.EXEC) == 5
    for v in (8, 9, -1, 2**33):
        with pytest.raises(ValueError, match=r"grant\(\): argument 'p' = %d is not an OR of the "
                                             r"flags of enum perm: READ \(1\), WRITE \(2\), "
                                             r"EXEC \(4\)" % v):
            lib.grant(v)
    assert [lib.mark(v) for v in (0, 1, 4, 5, 16, 21)] == [0, 1, 4, 5, 16, 21]
    for v in (2, 3, 8, 32, -16):
        with pytest.raises(ValueError, match="not an OR of the flags of enum sparse"):
            lib.mark(v)


def test_wrong_kind_refused(lib):
    with pytest.raises(TypeError, match=r"paint\(\): argument 'c' \(position 1\) got float, "
                                        r"expected int \(enum color\)"):
        lib.paint(5.0, 1)
    with pytest.raises(TypeError, match="got str, expected int"):
        lib.measure("1")


def test_returns_are_plain_ints(lib):
    assert [lib.pick(i) for i in range(3)] == [0, 5, 6]
    assert type(lib.pick(1)) is int
    assert [lib.sign(x) for x in (-3, 0, 3)] == [-1, 0, 1]


def test_beside_arrays_scalars_and_defaults(lib):
    x = np.arange(3.0)
    assert lib.scaled(x, 5, 2.0) == 11.0
    assert lib.scaled(x, w=1.0, c=Color.BLUE) == 9.0
    with pytest.raises(ValueError, match="argument 'c' = 2 is not a value of enum color"):
        lib.scaled(x, 2, 1.0)
    assert lib.shifted(3) == 4 and lib.shifted(3, -1) == 2
    with pytest.raises(ValueError, match="argument 'l' = 5 is not a value of enum level"):
        lib.shifted(3, 5)
    assert untyped(lib.shifted) == "(k, l=1)"


def test_metadata(built):
    meta = bindthem.parse_header(built[1])
    assert meta["preprocessed"] is False
    enums = {e["name"]: e for e in meta["enums"]}
    assert enums["color"] == {"name": "color", "type": "unsigned int", "flags": False,
                              "members": [["RED", 0], ["GREEN", 5], ["BLUE", 6]], "line": 8,
                              "in_header": True}
    assert enums["level"]["type"] == "int" and enums["level"]["members"][0] == ["BELOW", -1]
    assert enums["perm"]["flags"] and enums["sparse"]["flags"] and not enums["size"]["flags"]
    consts = {c["name"]: c for c in meta["constants"]}
    assert consts["LIMIT"] == {"name": "LIMIT", "value": 42, "line": 1}
    assert consts["GREETING"]["value"] == "hi there"
    ovs = {f["name"]: f["overloads"][0] for f in meta["functions"]}
    c, k = ovs["paint"]["params"]
    assert (c["type"], c["python"], c["enum"], c["string"]) == ("unsigned int", "int", "color",
                                                                False)
    assert k["enum"] is None
    assert ovs["pick"]["return"]["enum"] == "color" and ovs["pick"]["return"]["python"] == "int"
    assert ovs["sign"]["return"]["enum"] == "level"
    assert ovs["paint"]["signature"] == "int paint(color c, int k)"
    decls = {d["name"]: d for d in meta["declarations"]}
    assert decls["measure"]["params"][0]["enum"] == "size"
    assert decls["sign"]["return"]["enum"] == "level"
    brief = _core.parse_header(built[1], brief=True)
    assert brief["enums"] == [] and brief["constants"] == [] and brief["preprocessed"] is False


CXX_HEADER = """\
enum color { RED, GREEN = 5, BLUE };
enum class mode : unsigned char { OFF = 0, ON = 1, AUTO = 3 };
int paint(enum color c, int k);
int toggle(enum mode m, enum mode n);
template <class T> T tint(const T *x, int x_size, enum color c);
namespace ns { int shade(enum color c); }
"""

CXX_SOURCE = """\
#include "cxx.h"
int paint(color c, int k) { return (int)c * 10 + k; }
int toggle(mode m, mode n) { return (int)m * 10 + (int)n; }
template <class T> T tint(const T *x, int x_size, color c)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s + (T)c;
}
template double tint<double>(const double *, int, color);
template float tint<float>(const float *, int, color);
namespace ns { int shade(color c) { return (int)c; } }
"""

CXX_YAML = """\
- types:
    - [double]
    - [float]
  functions:
    - tint
"""


def test_cxx_names(tmp_path):
    """g++'s names: an enum is its source name, a substitution candidate
    (toggle's second mode is S_)."""
    for name, text in (("cxx.h", CXX_HEADER), ("cxx.cpp", CXX_SOURCE), ("cxx.yml", CXX_YAML)):
        (tmp_path / name).write_text(text)
    so = tmp_path / "libcxx.so"
    subprocess.run([CXX, "-O1", "-fPIC", "-shared", str(tmp_path / "cxx.cpp"), "-o", str(so)],
                   check=True)
    lib = bindthem.load(str(so), str(tmp_path / "cxx.h"), str(tmp_path / "cxx.yml"))
    assert lib.paint.symbols == ("_Z5paint5colori",)
    assert lib.toggle.symbols == ("_Z6toggle4modeS_",)
    assert lib.tint.symbols == ("_Z4tintIdET_PKS0_i5color", "_Z4tintIfET_PKS0_i5color")
    assert lib.shade.symbols == ("_ZN2ns5shadeE5color",)
    assert lib.paint(5, 1) == 51 and lib.toggle(1, 3) == 13 and lib.shade(6) == 6
    assert lib.tint(np.ones(2), 5) == 7.0 and lib.tint(np.ones(2, np.float32), 0) == 2.0
    with pytest.raises(ValueError, match="argument 'n' = 2 is not a value of enum mode"):
        lib.toggle(0, 2)
    meta = bindthem.parse_header(str(tmp_path / "cxx.h"), str(tmp_path / "cxx.yml"))
    (f,) = [f for f in meta["functions"] if f["name"] == "tint"]
    assert f["overloads"][0]["instantiation"] == \
        "template double tint<double>(const double x[], int x_size, color c);"
    assert f["overloads"][1]["name_expression"] == \
        "static_cast<float (*)(const float *, int, color)>(&::tint<float>)"


def test_open_function_with_an_enum(tmp_path):
    """A templated function without instantiate.yml binds open: its enum
    parameter's default, a member named, is a default before any
    instantiation and after."""
    h = tmp_path / "open.h"
    h.write_text("enum level { LOW = 1, MID, HIGH };\n"
                 "template <class T> T lift(const T *x, int x_size, enum level l = MID)\n"
                 "{\n    T s = 0;\n    for (int i = 0; i < x_size; i++)\n        s += x[i];\n"
                 "    return s * (T)l;\n}\n")
    lib = bindthem.build(str(h), cache_dir=str(tmp_path / "cache"))
    assert lib.lift.open and untyped(lib.lift) == "(x, l=2)"
    assert lib.lift(np.ones(2, np.float32)) == 4.0 and lib.lift(np.ones(2), 3) == 6.0
    assert untyped(lib.lift) == "(x, l=2)"
    with pytest.raises(ValueError, match="argument 'l' = 4 is not a value of enum level"):
        lib.lift(np.ones(2), 4)


def test_cuda_kernel_checks_its_enum(tmp_path, mock):
    """A launch's walk is the call's: an enum value checked before the
    launch, then stored at its parameter's size (the mock logs the bytes)."""
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("enum color { RED, GREEN = 5, BLUE };\n"
                 "__global__ void paint(float y[], int y_size, enum color c);\n")
    (ov,) = bindthem.parse_header(str(h))["functions"][0]["overloads"]
    assert ov["symbol"] == "_Z5paintPfi5color"
    lib = cuda.load(("bindthem-mock-module\nkernel %s 8 4 4\n" % ov["symbol"]).encode(), str(h))
    y = cuda.to_device(np.zeros(4, np.float32))
    mock.mock_clear_logs()
    lib.paint[1, 4](y, 6)
    assert launches(mock)[-1]["params"][2] == "06000000"
    with pytest.raises(ValueError, match=r"paint\(\): argument 'c' = 4 is not a value of enum "
                                         r"color"):
        lib.paint[1, 4](y, 4)
    assert len(launches(mock)) == 1
