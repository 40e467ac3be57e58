"""The driver entry points bindthem asks cuGetProcAddress for, against the
toolkit's cudaTypedefs.h (no GPU needed, only the CUDA headers).

cuGetProcAddress hands back the variant of a function whose ABI is that of
the CUDA version asked for, so the version is part of the call's type. The
rule csrc/driver/ follows, checked here for every entry of bt_cuda.c's
entry_points table:

1. bt_cuda_impl.h (the driver files' shared header) declares the entry's
   pointer as ``PFN_<name>_v<version>``, with the version the table requests;
2. cudaTypedefs.h has a (legacy-stream) ``PFN_<name>_v<version>`` whose
   parameter list is that declaration's, type for type (names and spelling
   of the driver's typedefs aside);
3. the version is the newest of cudaTypedefs.h's typedefs of that entry
   with that parameter list: bindthem stays on an older ABI only where the
   newer one takes other parameters (cuCtxSynchronize_v13000 takes a
   context), never where a newer version of the same call exists.

The mock (tests/cuda/mock) cannot see any of this: it logs what is asked.
"""

import os
import re

import pytest

from sources import ROOT

BT_CUDA = os.path.join(ROOT, "csrc", "driver", "bt_cuda.c")  # the entry_points table
BT_CUDA_IMPL = os.path.join(ROOT, "csrc", "driver", "bt_cuda_impl.h")  # the PFN typedefs


def _typedefs_h():
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        p = os.path.join(home, "include", "cudaTypedefs.h")
        if os.path.exists(p):
            return p
    return None


TYPEDEFS_H = _typedefs_h()
pytestmark = pytest.mark.skipif(TYPEDEFS_H is None,
                                reason="no cudaTypedefs.h (CUDA toolkit headers)")

# The driver's typedefs and bindthem's own spellings of them, by ABI.
CANON = {
    "CUresult": "int", "BtCUresult": "int", "CUdevice": "int", "CUdevice_v1": "int",
    "BtCUdevice": "int", "CUjit_option": "int", "BtCUjit_option": "int",
    "CUlibraryOption": "int", "BtCUlibraryOption": "int", "CUpointer_attribute": "int",
    "BtCUpointer_attribute": "int", "CUdriverProcAddressQueryResult": "int",
    "BtCUprocQuery": "int", "CUdeviceptr": "u64", "CUdeviceptr_v2": "u64",
    "BtCUdeviceptr": "u64", "CUdeviceptr_v1": "u32", "cuuint64_t": "u64", "uint64_t": "u64",
    "unsigned long long": "u64", "unsigned int": "u32", "unsigned": "u32",
    "size_t": "size_t", "int": "int", "char": "char", "void": "void", "float": "float",
    "CUdevice_attribute": "int", "BtCUdevice_attribute": "int",
    "CUfunction_attribute": "int", "BtCUfunction_attribute": "int",
    "CUmemPool_attribute": "int", "BtCUmemPool_attribute": "int",
    "CUlaunchConfig": "launch_config", "BtCUlaunchConfig": "launch_config",
    "CUoccupancyB2DSize": "b2d_fn", "BtCUoccupancyB2DSize": "b2d_fn",
    # managed memory (a CUmemLocation is passed by value)
    "CUmem_advise": "int", "CUmemLocation": "mem_location", "CUmemLocation_v1": "mem_location",
    "BtCUmemLocation": "mem_location",
    "CUstreamCaptureMode": "int", "BtCUstreamCaptureMode": "int",
    "CUstreamCaptureStatus": "int", "BtCUstreamCaptureStatus": "int",
}
HANDLES = ("context", "module", "function", "stream", "library", "kernel", "event", "memoryPool",
           "graph", "graphExec", "graphNode")
for _h in HANDLES:
    CANON["CU" + _h] = CANON["BtCU" + _h] = "handle"


def canonical(params, named):
    """A parameter list as a tuple of ABI types ('const char *', 'u64', ...).
    named: the header's parameters carry names (dropped), bindthem's don't."""
    out = []
    for p in (x.strip() for x in params.split(",")):
        if p in ("", "void"):
            continue
        p = re.sub(r"\s+", " ", p.replace("*", " * ")).strip()
        if named:
            p = re.sub(r"\s*\b[A-Za-z_]\w*$", "", p)
        for multi in ("unsigned long long", "unsigned int"):
            p = p.replace(multi, CANON[multi])
        words = [CANON.get(w, w) for w in p.split()]
        unknown = [w for w in words if w not in CANON.values() and w not in ("const", "*")]
        # the header's other types stay as spelled; all of bindthem's must be known
        assert named or not unknown, "canonical(): unmapped type %s in %r" % (unknown, p)
        out.append(" ".join(words))
    return tuple(out)


def header_typedefs():
    """{name: {version: canonical params}} of cudaTypedefs.h (legacy-stream
    typedefs: _ptds/_ptsz are the per-thread variants, not asked for)."""
    text = open(TYPEDEFS_H).read()
    out = {}
    for name, ver, params in re.findall(
            r"typedef\s+CUresult\s*\(CUDAAPI\s*\*PFN_(\w+?)_v(\d+)\)\s*\(([^;]*?)\)\s*;", text):
        out.setdefault(name, {})[int(ver)] = canonical(params, named=True)
    return out


def bindthem_typedefs():
    text = open(BT_CUDA_IMPL).read()
    out = {}
    for name, ver, params in re.findall(
            r"typedef\s+BtCUresult\s*\(\*PFN_(\w+?)_v(\d+)\)\s*\(([^;]*?)\)\s*;", text):
        out[(name, int(ver))] = canonical(params, named=False)
    return out


def entry_points():
    """[(name, version)] of bt_cuda.c's entry_points table."""
    text = open(BT_CUDA).read()
    table = text[text.index("entry_points[] = {"):]
    table = table[:table.index("};")]
    return [(n, int(v)) for n, v in re.findall(r"EP\((\w+),\s*(\d+),\s*[01]\)", table)]


def test_canonical_reads_both_spellings():
    assert canonical("CUdeviceptr_v2 *dptr, size_t bytesize", named=True) == ("u64 *", "size_t")
    assert canonical("BtCUdeviceptr *, size_t", named=False) == ("u64 *", "size_t")
    assert canonical("CUdeviceptr_v1 *dptr, unsigned int bytesize", named=True) == (
        "u32 *", "u32")
    assert canonical("const char *symbol, void **pfn", named=True) == (
        "const char *", "void * *")
    assert canonical("void", named=True) == ()


def test_every_entry_point_asks_for_its_typedefs_version():
    entries = entry_points()
    header = header_typedefs()
    ours = bindthem_typedefs()
    assert len(entries) >= 30 and len(header) > 300
    problems = []
    for name, ver in entries:
        mine = ours.get((name, ver))
        if mine is None:
            problems.append("%s: the table asks for %d but bt_cuda_impl.h declares no "
                            "PFN_%s_v%d" % (name, ver, name, ver))
            continue
        theirs = header.get(name, {})
        if ver not in theirs:
            problems.append("%s: cudaTypedefs.h has no PFN_%s_v%d (it has %s)"
                            % (name, name, ver, sorted(theirs) or "none"))
            continue
        if theirs[ver] != mine:
            problems.append("%s_v%d: bt_cuda_impl.h declares %s, cudaTypedefs.h %s"
                            % (name, ver, mine, theirs[ver]))
            continue
        newest = max(v for v, sig in theirs.items() if sig == mine)
        if newest != ver:
            problems.append("%s: asks for %d, but PFN_%s_v%d has the same parameters: ask for "
                            "that one (after reading what changed)" % (name, ver, name, newest))
    assert not problems, "\n".join(problems)


def test_older_abis_kept_only_where_the_parameters_changed():
    """The entries on an older ABI than cudaTypedefs.h's newest: each newer
    typedef takes other parameters (shown, so a reader sees why)."""
    header = header_typedefs()
    ours = bindthem_typedefs()
    kept = {}
    for name, ver in entry_points():
        newer = {v: sig for v, sig in header.get(name, {}).items() if v > ver}
        for v, sig in newer.items():
            assert sig != ours[(name, ver)], (name, v)
            kept[name] = v
    print("on an older ABI by choice:", kept)
    # CUDA 13 gave cuCtxSynchronize a context parameter: bindthem calls the
    # 2.0 one, so it must never be handed the 13.0 variant
    if 13000 in header.get("cuCtxSynchronize", {}):
        assert kept.get("cuCtxSynchronize") == 13000


def test_getprocaddress_itself_matches():
    header, ours = header_typedefs(), bindthem_typedefs()
    for name, ver in (("cuGetProcAddress", 11030), ("cuGetProcAddress", 12000),
                      ("cuDriverGetVersion", 2020)):
        assert ours[(name, ver)] == header[name][ver], name
