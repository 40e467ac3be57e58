"""Binding a CUDA module (csrc/cuda/bt_cudapy_bind.c) against the mock driver:
images and files, kernels named like library attributes, host and device
functions, missing kernels with near misses, parameter layouts, JIT errors;
remapped overloads with defaults; one Library class for CPU and CUDA, and
pickling it."""

import copy
import os
import pickle
import shutil
import struct

import numpy as np
import pytest
from cuda_support import (
    DATA,
    HEADER,
    OVL_HEADER,
    OVL_YAML,
    PRELUDE,
    YAML,
    last_launch,
    module_text,
    run_py,
)

import bindthem
import bindthem.cuda as cuda
from bindthem._services import display

# ---- loading ----

def test_library(lib):
    assert lib.__all__ == ["axpy", "fill_i", "negate", "scale"]
    assert lib.__file__ == "<bytes>"
    assert lib.scale.overloads == (
        "void scale<float>(const float s, float y[], const long y_size)",
        "void scale<double>(const double s, double y[], const long y_size)",
        "void scale<int>(const int s, int y[], const long y_size)")
    assert lib.negate.symbols == ("_ZN3ops6negateIfEEvPT_j",)
    assert lib.fill_i.symbols == ("fill_i",)  # extern "C": the plain name
    assert lib.axpy.parameters == ("a", "x", "y")
    assert "y = a * x + y" in lib.axpy.__doc__
    assert repr(lib.axpy) == "<bindthem.cuda kernel kernels.axpy with 2 overloads>"
    # a host function the YAML doesn't list is left out, not an error
    assert lib.not_kernels == ["int host_count(const int x[], const int x_size)"]


def test_load_from_file_without_yaml(mock, tmp_path):
    p = tmp_path / "k.fatbin"
    p.write_bytes(module_text(instantiate=None))
    lib = cuda.load(str(p), HEADER)
    assert lib.__file__ == str(p)
    assert lib.__all__ == ["fill_i"]  # untemplated kernels only
    assert lib.not_kernels == ["int host_count(const int x[], const int x_size)"]
    assert lib.unexported == []


def test_kernels_named_like_library_attributes(mock, tmp_path):
    h = tmp_path / "taken.cuh"
    h.write_text("// a\n__global__ void not_kernels(int n) {}\n"
                 "// b\n__global__ void metadata(int n) {}\n"
                 "// c\n__global__ void __name__(int n) {}\n"
                 "// d\nint host(int n) { return n; }\n")
    lib = cuda.load(module_text(str(h), None), str(h))
    assert isinstance(lib.not_kernels, cuda.Kernel) and isinstance(lib.metadata, cuda.Kernel)
    assert lib.__all__ == ["metadata", "not_kernels"] and lib.__name__ == "taken"
    info = bindthem.info(lib)
    assert info.not_kernels == ["int host(int n)"] and info.unexported == []
    assert [s["name"] for s in info.metadata["skipped"]] == ["__name__"]
    assert {"metadata", "not_kernels", "unexported"} <= set(dir(lib))
    assert lib.unexported == []  # no kernel of that name: bindthem's list


def test_missing_files_are_worded_alike(mock, tmp_path):
    # the module, the header and the YAML: one wording, the path named
    for args in ((str(tmp_path / "k.fatbin"), HEADER), (module_text(), str(tmp_path / "k.cuh")),
                 (module_text(), HEADER, str(tmp_path / "k.yml"))):
        missing = next(a for a in args if isinstance(a, str) and a.startswith(str(tmp_path)))
        with pytest.raises(FileNotFoundError) as ei:
            cuda.load(*args)
        assert str(ei.value) == ("[Errno 2] cannot open: No such file or directory: %r"
                                 % missing)


def test_host_function_listed(mock):
    with pytest.raises(bindthem.BindError, match=r"lists 'host_count' \(.*kernels.cuh:\d+\), "
                                                 r"which is not a __global__ kernel"):
        cuda.load(module_text(), HEADER, os.path.join(DATA, "host.yml"))


def test_device_function_unbindable(mock):
    meta = bindthem.parse_header(HEADER, YAML)
    assert {"name": "twice", "line": meta["skipped"][0]["line"],
            "reason": "unbindable: __device__ function is not a kernel",
            "deliberate": False, "unreadable": False} in meta["skipped"]


def test_missing_kernel_lists_what_the_module_has(mock):
    with pytest.raises(bindthem.SymbolError) as ei:
        cuda.load(module_text(drop={"_Z4axpyIfEvT_PKS0_iPS0_i"}), HEADER, YAML)
    msg = str(ei.value)
    assert msg.startswith("axpy: kernel axpy<float> (symbol _Z4axpyIfEvT_PKS0_iPS0_i) is not "
                          "in <bytes>; the module has axpy<double>(double, double const*, int, "
                          "double*, int), ")
    assert "ops::negate<float>(float*, unsigned int), fill_i" in msg
    assert "did you mean axpy<double>?" in msg
    assert "template __global__ void axpy<float>(" in msg


def test_missing_kernel_near_miss(mock):
    text = module_text(drop={"_Z5scaleIiEvT_PS0_l"}, extra=["kernel _Z6scalesIiEvT_PS0_l 4 8 8"])
    with pytest.raises(bindthem.SymbolError, match=r"did you mean scale<float> or "
                                                   r"scale<double>\?"):
        cuda.load(text, HEADER, YAML)
    text = module_text(drop={"_Z5scaleIiEvT_PS0_l", "_Z5scaleIfEvT_PS0_l",
                             "_Z5scaleIdEvT_PS0_l"}, extra=["kernel _Z6scalesIiEvT_PS0_l 4 8 8"])
    with pytest.raises(bindthem.SymbolError, match=r"did you mean scales<int>\?"):
        cuda.load(text, HEADER, YAML)


def test_param_layout_mismatch(mock):
    sym = "_Z4axpyIfEvT_PKS0_iPS0_i"
    with pytest.raises(bindthem.BindError, match=r"parameter 1 'a' of void axpy<float>\(.*\) is "
                                                 r"4 bytes at offset 0 by the header, but 8 bytes "
                                                 r"at offset 0 in the module's kernel"):
        cuda.load(module_text(edit={sym: [8, 8, 4, 8, 4]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError,
                       match=r"takes 4 parameters, but the header declares "
                             r"5: .* \(parameter 'y_size' has no counterpart\)"):
        cuda.load(module_text(edit={sym: [4, 8, 4, 8]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError, match="takes more than the 5 parameters"):
        cuda.load(module_text(edit={sym: [4, 8, 4, 8, 4, 4]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError, match=r"parameter 3 'x_size' .* 4 bytes at offset 16 "
                                                 r"by the header, but 8 bytes at offset 16"):
        cuda.load(module_text(edit={sym: [4, 8, 8, 8, 4]}), HEADER, YAML)


def test_layout_is_asked_in_a_context_on_a_thread_without_one(mock_path):
    """The driver answers cuKernelGetParamInfo only with a context current
    (CUDA_ERROR_INVALID_CONTEXT otherwise, as the 580 driver does on an
    H200, and the mock since): a load that is a process's first CUDA call,
    or made on a fresh thread, asks in the device's primary context and
    leaves the thread's context as it found it."""
    rc, out = run_py(PRELUDE + """
        import ctypes, threading
        drv = ctypes.CDLL(cuda.driver()["path"])

        def current():
            c = ctypes.c_void_p()
            assert drv.cuCtxGetCurrent(ctypes.byref(c)) == 0
            return c.value

        assert current() is None
        lib = cuda.load(module_text(edit={"_Z4axpyIfEvT_PKS0_iPS0_i": [4, 8, 4, 8, 4]}),
                        HEADER, YAML)  # the layout is checked: it matches
        print("bound", lib.__all__, current() is not None)
        seen = []

        def fresh():
            try:
                cuda.load(module_text(edit={"_Z4axpyIfEvT_PKS0_iPS0_i": [8, 8, 4, 8, 4]}),
                          HEADER, YAML)
            except bindthem.BindError as e:  # a mismatch, not CUDA_ERROR_INVALID_CONTEXT
                seen.append(str(e))
        t = threading.Thread(target=fresh)
        t.start()
        t.join()
        print(seen)
    """, mock_path)
    assert rc == 0, out
    assert "bound ['axpy', 'fill_i', 'negate', 'scale'] True" in out
    assert "by the header, but 8 bytes at offset 0" in out and "INVALID_CONTEXT" not in out


def test_jit_error_log(mock):
    with pytest.raises(cuda.CudaError) as ei:
        cuda.load(b"bindthem-mock-module\njit-error ptxas: syntax error at line 3\n", HEADER)
    assert ei.value.code == 218
    assert "cuLibraryLoadData failed (PTX JIT log follows):\nptxas fatal   : ptxas: syntax " \
           "error at line 3" in str(ei.value)


def test_invalid_image(mock):
    with pytest.raises(cuda.CudaError, match="cuLibraryLoadData failed: CUDA_ERROR_INVALID_IMAGE"):
        cuda.load(b"\x7fELF not really", HEADER)


# ---- parameter lists and defaults ----

def test_remapped_kernels_with_other_parameters_and_defaults(mock, clean):
    lib = cuda.load(module_text(OVL_HEADER, OVL_YAML), OVL_HEADER, OVL_YAML)
    k = lib.apply
    assert k.signatures == ("apply(y, s=2.0)", "apply(y, s=2.0)", "apply(src, dst)")
    assert k.__doc__.startswith("Overloaded function.\n\n1. apply(y, s=2.0)\n\ny *= s\n\n")
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    k[1, 4](y)  # s left out: the default, as float
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z8scale_byIfEvPT_iS0_"
    assert rec["params"][2] == struct.pack("<f", 2.0).hex()
    yd = cuda.to_device(np.ones(3))
    k(yd, 0.5, grid=1, block=4)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z8scale_byIdEvPT_iS0_"
    assert rec["params"][2] == struct.pack("<d", 0.5).hex()
    src = cuda.to_device(np.arange(3, dtype=np.float32))
    for call in (lambda: k[1, 4](src, y), lambda: k(dst=y, src=src, grid=1, block=4)):
        call()
        rec = last_launch(clean)
        assert rec["kernel"] == "_Z9copy_fromIfEvPKT_iPS0_i"
        assert [bytes.fromhex(p) for p in rec["params"]] == [
            struct.pack("<Q", src.ptr), struct.pack("<i", 3),
            struct.pack("<Q", y.ptr), struct.pack("<i", 3)]
    with pytest.raises(TypeError, match=r"^apply\(\): no overload takes 0 positional arguments;"
                                        r" the overloads are:\n    apply\(y, s=2.0\): void "
                                        r"scale_by<float>\("):
        k[1, 1]()
    with pytest.raises(TypeError, match=r"apply\(\): argument 'dst' is an array in host memory"):
        k[1, 1](src, dst=np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"apply\(\): argument 's' \(position 2\) got bindthem."
                                        r"cuda.DeviceArray \(a device array of float32, via "
                                        r"DeviceArray\), expected float \(double\)"):
        k[1, 1](yd, y)
    with pytest.raises(TypeError, match=r"needs grid= and block="):
        k(y)


# ---- one Library class; pickling ----

def test_one_library_class_for_cpu_and_cuda(lib):
    assert cuda.Library is bindthem.Library and isinstance(lib, bindthem.Library)
    assert repr(lib) == "<bindthem.Library 'kernels' from '<bytes>' (4 CUDA kernels)>"
    assert lib.__doc__.startswith("CUDA kernels of kernels.cuh, bound by bindthem.\n\n"
                                  "Methods\n-------\n")
    assert lib.__doc__.split("-------\n")[1].split() == lib.__all__
    info = bindthem.info(lib)
    assert info.backend.name == "cuda" and info.library is lib
    assert info.header == HEADER and info.metadata["header"] == HEADER
    assert set(dir(lib)) == set(lib.__all__) | {
        "__all__", "__doc__", "__file__", "__name__", "metadata",
        "unexported", "not_kernels"}
    assert bindthem.library.library_of(lib.axpy) is lib
    # the same display as a CPU Library's, kernels by their Python signatures
    html = lib._repr_html_()
    assert "<b>bindthem.Library</b> <code>kernels</code>: 4 CUDA kernels from" in html
    assert "<code>axpy(a, x, y)</code>" in html
    assert "void axpy&lt;float&gt;(const float a" in html
    text = display.library_text(lib)
    assert text.startswith("bindthem.Library 'kernels': 4 CUDA kernels\n")
    assert "\naxpy(a, x, y)  # line " in text
    assert bindthem.getsource(lib.axpy).count("axpy(") == 1
    assert "__global__ void axpy" in bindthem.getsource(lib.axpy)


def test_cuda_library_pickles_by_value(mock, mock_path, tmp_path, clean):
    src = tmp_path / "src"
    src.mkdir()
    h, y = src / "k.cuh", src / "k.yml"
    shutil.copy(HEADER, h)
    shutil.copy(YAML, y)
    image = tmp_path / "k.fatbin"
    image.write_bytes(module_text())
    lib = cuda.load(str(image), str(h), str(y))
    # in this process: the live Library, and each kernel alone
    assert pickle.loads(pickle.dumps(lib)) is lib
    assert pickle.loads(pickle.dumps(lib.axpy)) is lib.axpy
    assert copy.copy(lib) is lib and copy.deepcopy(lib.scale) is lib.scale
    data = pickle.dumps((lib, lib.axpy))
    assert module_text() in data  # the image travels, not its path
    shutil.rmtree(src)
    image.unlink()
    # another process, without the files: the carried header, YAML and image
    p = tmp_path / "lib.pickle"
    p.write_bytes(data)
    rc, out = run_py(PRELUDE + """
        import pickle
        lib, axpy = pickle.load(open(%r, "rb"))  # bound on first use (bindthem._unpickle)
        x = cuda.to_device(np.arange(4, dtype=np.float32))
        y = cuda.to_device(np.ones(4, dtype=np.float32))
        axpy[1, 4](2.0, x, y)
        print(repr(lib), lib.__file__ == %r, axpy.library is lib)
        print(bindthem.info(lib).header.startswith(%r), lib.__all__)
        print(y.copy_to_host().tolist())
        print(pickle.loads(pickle.dumps(axpy)) is lib.axpy)
    """ % (str(p), str(image), str(tmp_path / "cache")), mock_path,
        BINDTHEM_CACHE=tmp_path / "cache")
    assert rc == 0, out
    assert out.splitlines() == [
        "<bindthem.Library 'k' from %r (4 CUDA kernels)> True True" % str(image),
        "True ['axpy', 'fill_i', 'negate', 'scale']",
        "[1.0, 3.0, 5.0, 7.0]", "True"]


def test_cuda_unpickle_without_a_driver_is_no_driver_error(lib, tmp_path):
    p = tmp_path / "lib.pickle"
    p.write_bytes(pickle.dumps(lib.scale))
    rc, out = run_py(PRELUDE + """
        import pickle
        for what, f in (("load", lambda: cuda.load(module_text(), HEADER, YAML)),
                        ("unpickle", lambda: pickle.load(open(%r, "rb")).library)):
            try:
                f()
            except cuda.NoDriverError as e:
                print(what, type(e).__name__, e)
    """ % str(p), "/nonexistent/libcuda.so.1")
    assert rc == 0, out
    load, unpickle = out.splitlines()
    assert load.startswith("load NoDriverError no CUDA driver: cannot load "
                           "/nonexistent/libcuda.so.1")
    assert unpickle == load.replace("load", "unpickle", 1)


def test_cuda_library_of_templates_without_yaml_warns(mock, tmp_path):
    h = tmp_path / "t.cuh"
    h.write_text("// Scale.\ntemplate <class T>\n__global__ void sc(T y[], const int y_size) {}\n"
                 "// host\nint host(int n) { return n; }\n")
    with pytest.warns(bindthem.BindWarning, match=r"t\.cuh binds no functions: its functions "
                                                  r"are templates \(sc<T>\)"):
        lib = cuda.load(b"bindthem-mock-module\n", str(h))
    assert lib.__all__ == [] and lib.not_kernels == ["int host(int n)"]
