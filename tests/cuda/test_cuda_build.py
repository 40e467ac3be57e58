"""Building kernels with bindthem.cuda's toolchains: nvcc fatbins, default
archs, build errors, the CPU prelude and std::complex, NVRTC (lowered names,
stand-in includes, logs, arch choices, no libnvrtc). Tests that need nvcc or
libnvrtc skip without them; the rest run against the mock driver."""

import os
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest
from cuda_support import (
    DATA,
    HALF_HEADER,
    HALF_YAML,
    HEADER,
    NVCC,
    OVL_HEADER,
    OVL_YAML,
    PRELUDE,
    YAML,
    elf_function_symbols,
    kernel_symbols,
    last_launch,
    needs_nvcc,
    needs_nvrtc,
    run_py,
)

import bindthem
import bindthem.cuda as cuda
from bindthem._services.cuda import nvrtc

# ---- nvcc ----

@needs_nvcc
def test_build_fatbin(tmp_path):
    out = cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress"])
    blob = open(out, "rb").read()
    meta = bindthem.parse_header(HEADER, YAML)
    kernels = {d["name"] for d in meta["declarations"] if d["global"]}
    want = {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]
            if ov["function"] in kernels}
    assert len(want) > 5
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:
        syms = subprocess.run([cuobjdump, "-symbols", out], capture_output=True,
                              text=True).stdout
        assert all(s in syms for s in want), syms
    else:
        assert want <= elf_function_symbols(blob)
    # cached: a second build is the same file, untouched
    mtime = os.path.getmtime(out)
    assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                               cxxflags=["-O3", "--no-compress"]) == out
    assert os.path.getmtime(out) == mtime
    # bindthem.build's option names: extra_cxxflags= is appended to -O3, so
    # this is the same command line, hence the same cached fatbin
    assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                               extra_cxxflags="--no-compress") == out
    # flags=, the old name of cxxflags=, still works for one release
    with pytest.warns(DeprecationWarning, match=r"bindthem.cuda.compile_fatbin\(flags=...\) is "
                                                r"deprecated: the option is called cxxflags=") as w:
        assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                                   flags=["-O3", "--no-compress"]) == out
    assert w[0].filename == __file__  # points at the caller's line
    with pytest.raises(TypeError, match="cxxflags= and flags= both given"):
        cuda.compile_fatbin(HEADER, YAML, cxxflags="-O2", flags="-O3")
    assert os.path.getmtime(out) == mtime


@needs_nvcc
def test_default_archs():
    _, supported = cuda._nvcc_info(NVCC)
    chosen = cuda._archs(None, supported)
    assert chosen and set(chosen) <= set(cuda.DEFAULT_ARCHS) and set(chosen) <= set(supported)
    assert cuda._archs(["sm_80", 86, "compute_90"], supported) == [80, 86, 90]
    with pytest.raises(bindthem.BindValueError):  # also a ValueError
        cuda._archs("ampere", supported)
    assert issubclass(bindthem.BindValueError, ValueError)
    with pytest.raises(bindthem.BuildError, match="does not support sm_10"):
        cuda._archs(10, supported)


def bad_header(tmp_path):
    """A header whose kernel k<float> uses an undeclared name on line 4, and its YAML."""
    bad = tmp_path / "bad.cuh"
    bad.write_text("/* k */\ntemplate <class T>\n__global__ void k(T y[], const int y_size)\n"
                   "{ y[0] = undeclared_name; }\n")
    yml = tmp_path / "bad.yml"
    yml.write_text("instantiate:\n  - functions: [k]\n    types:\n      - [float]\n")
    return str(bad), str(yml)


@needs_nvcc
def test_build_error(tmp_path):
    bad, yml = bad_header(tmp_path)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.build(str(bad), str(yml), arch=75, cache_dir=str(tmp_path / "cache"))
    with pytest.warns(DeprecationWarning, match=r"cuda.build\(flags=...\)") as w, \
            pytest.raises(bindthem.BuildError):
        cuda.build(str(bad), str(yml), arch=75, cache_dir=str(tmp_path / "cache"), flags="-O2")
    assert w[0].filename == __file__
    assert "nvcc failed (exit" in str(ei.value)
    assert "undeclared_name" in ei.value.output
    assert ei.value.command[0].endswith("nvcc")


@needs_nvcc
def test_build_then_load_reaches_the_driver(mock, clean, tmp_path):
    # the mock reads a real fatbin's cubin (names and parameter layouts)
    lib = cuda.build(HEADER, YAML, arch=75, cache_dir=str(tmp_path), compiler="nvcc")
    assert lib.__file__.endswith(".fatbin")
    d = cuda.to_device(np.ones(3, np.int32))
    lib.scale[1, 4](3, d)
    assert last_launch(clean)["kernel"] == "_Z5scaleIiEvT_PS0_l"
    # a compressed fatbin is beyond the mock: the load gets as far as the driver
    with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_IMAGE"):
        cuda.load(b"\x50\xed\x55\xba\x01\x00\x10\x00" + bytes(64), HEADER, YAML)


# ---- std::complex, the prelude, NVRTC ----

CPLX_HEADER = os.path.join(DATA, "complex.cuh")
CPLX_YAML = os.path.join(DATA, "complex.yml")


def test_kernel_source_has_the_cpu_prelude():
    from bindthem._services.compile.source import PRELUDE
    src = cuda.kernel_source(CPLX_HEADER, CPLX_YAML)
    # the device pass's std::complex first (nvcc_complex.cuh), then the CPU's prelude
    assert src.startswith(cuda.NVCC_PRELUDE) and cuda.NVCC_PRELUDE.endswith(PRELUDE)
    assert "#include <complex>" in src
    assert "template __global__ void zaxpy<std::complex<float>>(" in src
    nv = cuda.kernel_source(CPLX_HEADER, CPLX_YAML, compiler="nvrtc")
    assert nv.startswith(cuda.NVRTC_PRELUDE) and "#include <complex>" not in nv
    with pytest.raises(ValueError, match="compiler='gcc': expected 'nvcc' or 'nvrtc'") as ei:
        cuda.kernel_source(CPLX_HEADER, CPLX_YAML, compiler="gcc")
    assert isinstance(ei.value, bindthem.BindValueError)


@needs_nvcc
def test_nvcc_builds_std_complex_and_binds(mock, clean, tmp_path):
    out = cuda.compile_fatbin(CPLX_HEADER, CPLX_YAML, arch=75, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress"])
    want = kernel_symbols(CPLX_HEADER, CPLX_YAML)
    assert len(want) == 3 and want <= elf_function_symbols(open(out, "rb").read())
    # the mock reads the fatbin's cubin: kernels and parameter layouts (checked
    # against the header at load), launched with the bytes bindthem packs
    lib = cuda.load(out, CPLX_HEADER, CPLX_YAML)
    assert lib.__all__ == ["sqnorm", "zaxpy"]
    x = cuda.to_device(np.ones(3, np.complex64))
    y = cuda.to_device(np.zeros(3, np.complex64))
    lib.zaxpy[1, 32](np.complex64(1.5 - 2j), x, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5zaxpyISt7complexIfEEvT_PKS2_iPS2_i"
    assert rec["params"][0] == struct.pack("<ff", 1.5, -2.0).hex()
    assert rec["params"][1:] == [struct.pack("<Q", x.ptr).hex(), struct.pack("<i", 3).hex(),
                                 struct.pack("<Q", y.ptr).hex(), struct.pack("<i", 3).hex()]


def _ptx_body(ptx, symbol):
    """The PTX text of the entry ``symbol``, from its name to its closing brace."""
    start = ptx.index(".entry " + symbol + "(")
    return ptx[start:ptx.index("\n}\n", start)]


@needs_nvcc
def test_nvcc_std_complex_computes_in_device_code(tmp_path):
    """libstdc++'s std::complex does its arithmetic on GCC's __complex__
    types, which nvcc's device code drops: zaxpy's y = a * x + y compiled to
    y = a + y, with x never read (seen on an H200: every element came out a).
    The device pass's std::complex reads x and multiplies."""
    src = tmp_path / "k.cu"
    src.write_text(cuda.kernel_source(CPLX_HEADER, CPLX_YAML))
    out = tmp_path / "k.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=compute_75", "-std=c++20", "--expt-relaxed-constexpr",
                    "-O3", str(src), "-o", str(out)], check=True)
    ptx = out.read_text()
    for t, sym in (("f64", "_Z5zaxpyISt7complexIdEEvT_PKS2_iPS2_i"),
                   ("f32", "_Z5zaxpyISt7complexIfEEvT_PKS2_iPS2_i")):
        body = _ptx_body(ptx, sym)
        loads = body.count("ld.global.%s" % t) + body.count("ld.global.v2.%s" % t)
        assert loads >= 2 and body.count("ld.global") >= 2, body  # x and y, not y alone
        products = len(re.findall(r"\b(?:mul|fma\.rn)\.%s\b" % t, body))
        assert products >= 4, body  # (ar xr - ai xi) + i (ar xi + ai xr)


@needs_nvcc
def test_nvcc_every_complex_operation_builds_and_keeps_the_layout(mock, clean, tmp_path):
    """Each std::complex operator and function compiles for the device; a
    complex<double> after an int and a complex<float> after a float sit where
    the header (libstdc++'s layout: aligned as their component) puts them:
    the mock reads the cubin's layout and checks it at load."""
    ops, yml = os.path.join(DATA, "complex_ops.cuh"), os.path.join(DATA, "complex_ops.yml")
    out = cuda.compile_fatbin(ops, yml, arch=75, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress"])
    lib = cuda.load(out, ops, yml)
    assert lib.__all__ == ["every_op", "mixed"]
    x = cuda.to_device(np.ones(3, np.complex128))
    y = cuda.to_device(np.zeros(3, np.complex128))
    lib.mixed[1, 32](7, 1.5 - 2j, np.float32(0.5), np.complex64(0.25 + 4j), x, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5mixediSt7complexIdEfS_IfEPKS0_iPS0_i"
    assert rec["params"][:4] == [struct.pack("<i", 7).hex(), struct.pack("<dd", 1.5, -2).hex(),
                                 struct.pack("<f", 0.5).hex(), struct.pack("<ff", 0.25, 4).hex()]


@needs_nvcc
def test_nvcc_flags_for_std_complex(tmp_path):
    bad, yml = bad_header(tmp_path)
    for flags, std in ((None, "-std=c++20"), (["-O2", "-std=c++17"], "-std=c++17")):
        with pytest.raises(bindthem.BuildError) as ei:
            cuda.compile_fatbin(bad, yml, arch=75, cxxflags=flags,
                                cache_dir=str(tmp_path / "cache"))
        cmd = ei.value.command
        assert "--expt-relaxed-constexpr" in cmd
        assert [f for f in cmd if f.startswith("-std")] == [std]


@needs_nvrtc
@pytest.mark.parametrize("arch, magic", [(75, b"\x7fELF"), ("compute_75", b"//")])
def test_nvrtc_names_match_bindthem(mock, clean, tmp_path, arch, magic):
    out = cuda.compile_nvrtc(HEADER, YAML, arch=arch, cache_dir=str(tmp_path))
    blob = open(out, "rb").read()
    assert blob.startswith(magic)
    want = kernel_symbols(HEADER, YAML)
    if magic == b"//":
        import re
        assert want == set(re.findall(r"\.entry (\w+)\(", blob.decode()))
    else:
        assert want <= elf_function_symbols(blob)
    lib = cuda.load(out, HEADER, YAML)
    assert lib.__all__ == ["axpy", "fill_i", "negate", "scale"]
    x = cuda.to_device(np.arange(4, dtype=np.float64))
    y = cuda.to_device(np.ones(4))
    lib.axpy[1, 4](2.0, x, y)
    assert last_launch(clean)["kernel"] == "_Z4axpyIdEvT_PKS0_iPS0_i"
    # cached: the same file, untouched
    mtime = os.path.getmtime(out)
    assert cuda.compile_nvrtc(HEADER, YAML, arch=arch, cache_dir=str(tmp_path)) == out
    assert os.path.getmtime(out) == mtime


@needs_nvrtc
def test_nvrtc_std_complex_and_remapped_overloads(mock, clean, tmp_path):
    lib = cuda.build(CPLX_HEADER, CPLX_YAML, compiler="nvrtc", arch=80,
                     cache_dir=str(tmp_path))
    assert lib.__file__.endswith(".cubin")
    assert kernel_symbols(CPLX_HEADER, CPLX_YAML) <= elf_function_symbols(
        open(lib.__file__, "rb").read())
    x = cuda.to_device(np.ones(2, np.complex128))
    out = cuda.to_device(np.zeros(2))
    lib.sqnorm[1, 32](x, out, 0.25)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z6sqnormISt7complexIdEdEvPKT_iPT0_iS5_"
    assert rec["params"][4] == struct.pack("<d", 0.25).hex()
    # overloads of one remapped name with other parameter lists
    ovl = cuda.build(OVL_HEADER, OVL_YAML, compiler="nvrtc", cache_dir=str(tmp_path))
    assert ovl.__file__.endswith(".ptx") and ovl.__all__ == ["apply"]


@needs_nvrtc
def test_nvrtc_standard_includes_are_stand_ins(tmp_path):
    """A header written for the CPU build includes <complex>, <algorithm>,
    <cmath>: under NVRTC they are empty stand-ins, the prelude's libcu++
    names doing the work."""
    h = tmp_path / "std.cuh"
    h.write_text("#include <complex>\n#include <algorithm>\n#include <cmath>\n"
                 "/* clamp */\n"
                 "template <class T>\n"
                 "__global__ void clamp(std::complex<T> x[], const int x_size, const T r)\n"
                 "{ int i = threadIdx.x; if (i < x_size) x[i] *= std::min(r, std::abs(x[i])); }\n")
    y = tmp_path / "std.yml"
    y.write_text("instantiate:\n  - functions: [clamp]\n    types:\n      - [float]\n")
    out = cuda.compile_nvrtc(str(h), str(y), cache_dir=str(tmp_path / "cache"))
    text = open(out).read()
    want = kernel_symbols(str(h), str(y))
    assert len(want) == 1 and all(".entry " + w in text for w in want), (want, text[:2000])


@needs_nvrtc
def test_nvrtc_lowered_name_mismatch_names_both(monkeypatch, tmp_path):
    real = nvrtc._kernel_overloads

    def wrong(meta):
        for ov, d in real(meta):
            if ov["symbol"] == "_Z4axpyIfEvT_PKS0_iPS0_i":
                ov = dict(ov, symbol="_Z4axpyIfEvT_PKS0_iPS0_l")
            yield ov, d

    monkeypatch.setattr(nvrtc, "_kernel_overloads", wrong)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.compile_nvrtc(HEADER, YAML, cache_dir=str(tmp_path))
    assert ("void axpy<float>(const float a, const float x[], const int x_size, float y[], "
            "const int y_size): NVRTC lowers it to _Z4axpyIfEvT_PKS0_iPS0_i, bindthem mangles "
            "it _Z4axpyIfEvT_PKS0_iPS0_l") in str(ei.value)


@needs_nvrtc
def test_nvrtc_header_error_shows_its_log(tmp_path):
    bad, yml = bad_header(tmp_path)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.build(bad, yml, compiler="nvrtc", cache_dir=str(tmp_path / "c"))
    msg = str(ei.value)
    assert msg.startswith("NVRTC failed to compile %s: nvrtcCompileProgram: "
                          "NVRTC_ERROR_COMPILATION" % bad)
    assert '%s:4: error: identifier "undeclared_name" is undefined' % bad in msg
    assert "%s(4): error" % bad in ei.value.output  # NVRTC's own log, as it wrote it


@needs_nvrtc
def test_nvrtc_host_only_include_says_why(tmp_path):
    h = tmp_path / "vec.cuh"
    h.write_text("#include <vector>\n/* k */\n__global__ void k(float y[], const int y_size)\n"
                 "{ y[0] = 1; }\n")
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert 'cannot open source file "vector"' in str(ei.value)
    assert "<vector>, <string>, <iostream> have no device version (build with nvcc" in str(
        ei.value)


@needs_nvrtc
def test_nvrtc_tracks_local_includes(tmp_path):
    (tmp_path / "inc.h").write_text("#define SCALE 2\n")
    h = tmp_path / "k.cuh"
    h.write_text('#include "inc.h"\n/* k */\n__global__ void k(float y[], const int y_size)\n'
                 "{ y[0] = SCALE; }\n")
    first = cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c")) == first
    (tmp_path / "inc.h").write_text("#define SCALE 3\n")
    second = cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert second != first
    assert "%d;" % 0x40000000 in open(first).read()  # 2.0f's bits in the PTX
    assert "%d;" % 0x40400000 in open(second).read()  # 3.0f's


@needs_nvrtc
def test_nvrtc_arch_choices(tmp_path):
    with pytest.raises(ValueError, match="NVRTC compiles for one architecture at a time"):
        cuda.compile_nvrtc(HEADER, YAML, arch=[75, 80], cache_dir=str(tmp_path))
    with pytest.raises(bindthem.BuildError, match="this NVRTC does not support sm_20"):
        cuda.compile_nvrtc(HEADER, YAML, arch="sm_20", cache_dir=str(tmp_path))
    assert cuda._pick_compiler(None, "/nonexistent/nvcc") == "nvrtc"
    assert cuda._pick_compiler("nvrtc", None) == "nvrtc"


def test_no_libnvrtc_names_what_to_install(tmp_path):
    rc, out = run_py(PRELUDE + """
        for call in (lambda: cuda.compile_nvrtc(HEADER, YAML, cache_dir=%r),
                     lambda: cuda.build(HEADER, YAML, compiler="nvrtc", cache_dir=%r)):
            try:
                call()
            except bindthem.BuildError as e:
                print(e)
    """ % (str(tmp_path), str(tmp_path)), BINDTHEM_LIBNVRTC="/nonexistent/libnvrtc.so.13")
    assert rc == 0, out
    assert out.count("cannot find libnvrtc (NVRTC, CUDA's run-time compiler): install the "
                     "CUDA toolkit") == 2, out
    assert "`pip install nvidia-cuda-nvrtc` (CUDA 13" in out
    assert "cannot load /nonexistent/libnvrtc.so.13" in out


# ---- __half, static kernels ----

@needs_nvrtc
def test_nvrtc_builds_half_and_static_kernels(mock, clean, tmp_path):
    # NVRTC finds cuda_fp16.h in the toolkit; its lowered names are checked
    # against bindthem's (a mismatch is a BuildError)
    out = cuda.compile_nvrtc(HALF_HEADER, HALF_YAML, arch=90, cache_dir=str(tmp_path))
    lib = cuda.load(out, HALF_HEADER, HALF_YAML)
    lib.hscale[1, 2](0.5, cuda.to_device(np.ones(2, np.float16)), 1)
    assert last_launch(clean)["kernel"] == "_Z6hscale6__halfPS_iS_"
    lib.sfill[1, 3](7, cuda.to_device(np.zeros(3, dtype=np.int32)))
    assert last_launch(clean)["kernel"] == "_Z5sfilliPii"
