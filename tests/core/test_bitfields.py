"""Structs with bit-fields: laid out as the C ABI packs them (size and
alignment gcc's), passed by pointer as records the caller allocates. NumPy
has no bit-fields: the bytes of each run of them are one field, an
unsigned char array named after them ("ready,mode,level"), so that NumPy
copies and compares them with the record. By value such a struct is left
out with its reason. glibc's regex_t (regcomp, regexec,
regfree) for real."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from sources import c_library
from support import python_env

import bindthem
from bindthem import _core

HEADER = """\
typedef enum { LOW, HIGH } level_t;
/* A pointer, then flags packed into one unsigned int. */
typedef struct flags {
    const char *label;
    unsigned ready : 1;
    unsigned mode : 3;
    level_t level : 1;
    unsigned : 0;
    unsigned char count;
    unsigned long long stamp : 40;
} flags_t;
struct holder { int id; struct flags f; };
struct odd { char c; unsigned long long w : 9; };

/* Sets every field of f. */
void flags_set(flags_t *f, unsigned mode, unsigned char count, unsigned long long stamp);
/* ready + 10 * mode + 100 * level + 1000 * count, of each of n records. */
long flags_sum(const flags_t *f, int n);
long holder_sum(const struct holder *h);
long flags_by_value(flags_t f);
long holder_by_value(struct holder h);
int odd_get(const struct odd *o);
"""

SOURCE = """\
#include "bits.h"
void flags_set(flags_t *f, unsigned mode, unsigned char count, unsigned long long stamp)
{
    f->label = "set";
    f->ready = 1;
    f->mode = mode;
    f->level = HIGH;
    f->count = count;
    f->stamp = stamp;
}
static long one(const flags_t *f)
{
    return f->ready + 10L * f->mode + 100L * f->level + 1000L * f->count;
}
long flags_sum(const flags_t *f, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += one(&f[i]);
    return s;
}
long holder_sum(const struct holder *h) { return h->id + one(&h->f); }
long flags_by_value(flags_t f) { return one(&f); }
long holder_by_value(struct holder h) { return h.id; }
int odd_get(const struct odd *o) { return o->c + (int)o->w; }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "bits", HEADER, SOURCE)


@pytest.fixture(scope="module", params=["direct", "ffi"])
def lib(request, built):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the by-value functions, left out
        lib = bindthem.load(*built)
    old = _core.force_ffi(request.param == "ffi")
    yield lib
    _core.force_ffi(old)


def test_laid_out_as_the_compiler_packs_it(lib):
    # label 0..8, the first int's bits (ready, mode, level) 8..12, `: 0` ends that int,
    # count at 12, stamp's 40 bits in the long long at 16..24: gcc's sizeof 24, alignment 8
    assert lib.flags_t.itemsize == 24 and lib.flags_t.alignment == 8
    assert lib.flags_t.names == ("label", "ready,mode,level", "count", "stamp")
    assert [lib.flags_t.fields[n][1] for n in lib.flags_t.names] == [0, 8, 12, 16]
    assert lib.flags_t["ready,mode,level"] == np.dtype((np.uint8, (1,)))
    assert lib.flags_t["stamp"] == np.dtype((np.uint8, (5,)))
    assert lib.holder.itemsize == 32 and lib.holder.fields["f"][1] == 8
    meta = {s["name"]: s for s in lib.metadata["structs"]}
    assert meta["flags_t"]["bitfields"] and not meta["holder"]["bitfields"]
    assert [f["bits"] for f in meta["flags_t"]["fields"]] == [False, True, False, True]


def test_the_library_reads_and_writes_the_bits(lib):
    f = np.zeros(3, lib.flags_t)
    assert lib.flags_sum(f, 3) == 0
    lib.flags_set(f[1:2], 5, 7, 2**39 + 3)
    assert lib.flags_sum(f, 3) == 1 + 50 + 100 + 7000
    assert f["count"][1] == 7 and f["label"][1] != 0 and f["count"][0] == 0
    raw = f.view(np.uint8).reshape(3, 24)
    assert raw[1, 8] == 0b11011  # ready 1, mode 5 (101), level 1: gcc's bit order
    assert f["ready,mode,level"][1, 0] == 0b11011
    assert int.from_bytes(f["stamp"][1].tobytes(), "little") == 2**39 + 3
    lib.flags_set(f[:1], 1, 2, 0)
    h = np.zeros((), lib.holder)
    h["id"], h["f"] = 4, f[0]  # the bits travel with the record's bytes
    assert lib.holder_sum(h) == 4 + 1 + 10 + 100 + 2000


def test_by_value_left_out_with_the_reason(lib):
    left = {x["name"]: x["reason"] for x in bindthem.info(lib).left_out}
    assert "flags_by_value" not in lib.__all__ and "holder_by_value" not in lib.__all__
    for name in ("flags_by_value", "holder_by_value"):
        assert "bit-fields" in left[name] and "pass it by pointer" in left[name], left[name]


def test_the_c_alignment_is_checked_not_the_dtypes(lib):
    """A struct whose only wide member is a bit-field: NumPy's dtype is
    aligned 1 (its fields are a char and bytes), C's is 8; a record at an address
    that is no multiple of 8 is refused with the remedy, not passed."""
    assert lib.odd.itemsize == 8 and lib.odd.alignment == 1
    buf = np.zeros(24, np.uint8)
    base = (-buf.ctypes.data) % 8
    good = buf[base:base + 8].view(lib.odd)
    good["c"] = 3
    buf[base + 1] = 5  # w's low byte
    assert lib.odd_get(good) == 8
    bad = buf[base + 1:base + 9].view(lib.odd)
    assert bad.flags.aligned  # by NumPy's measure
    with pytest.raises(TypeError, match=r"not a multiple of their alignment \(8 bytes\)"):
        lib.odd_get(bad)


REGEX = """
import numpy as np, bindthem
lib = bindthem.load("libc.so.6", "/usr/include/regex.h")
rx = np.zeros((), lib.regex_t)
assert lib.regcomp(rx, r"(a+)(b*)c", lib.REG_EXTENDED) == 0
assert rx["re_nsub"] == 2
m = np.full(3, -1, lib.regmatch_t)
assert lib.regexec(rx, "xxaabbbc--", 3, m, 0) == 0
print([(int(a), int(b)) for a, b in m.tolist()])
assert lib.regexec(rx, "nothing", 3, m, 0) == lib.REG_NOMATCH
lib.regfree(rx)
bad = np.zeros((), lib.regex_t)
assert lib.regcomp(bad, "a(", lib.REG_EXTENDED) != 0
print("ok")
"""


def test_glibc_regex():
    """regex.h unmodified: regex_t has bit-fields, so it was an opaque handle
    nobody could allocate; now a record, as in C (`regex_t rx;`)."""
    if not os.path.exists("/usr/include/regex.h"):
        pytest.skip("needs regex.h")
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", REGEX], capture_output=True,
                       text=True, env=python_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["[(2,", "8),", "(2,", "4),", "(4,", "7)]", "ok"]


def test_a_long_run_of_bit_fields_is_one_field_with_a_bounded_name(tmp_path):
    """20,000 one-bit fields: one field of their 2,500 bytes, whose name
    stops growing (",..."): what the header costs stays linear in it."""
    header = tmp_path / "many.h"
    header.write_text("struct many { %s };\nint many_get(const struct many *m);\n"
                      % " ".join("unsigned f%d : 1;" % i for i in range(20000)))
    st = {s["name"]: s for s in bindthem.parse_header(str(header))["structs"]}["many"]
    assert (st["size"], st["align"]) == (2500, 4)
    [f] = st["fields"]
    assert f["bits"] and f["size"] == 2500 and f["offset"] == 0
    assert f["name"].startswith("f0,f1,f2,") and f["name"].endswith(",...")
    assert len(f["name"]) < 220
