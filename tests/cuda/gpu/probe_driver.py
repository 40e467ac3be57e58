"""What the real driver says about the device check's module images, for a
run that fails before its tests can: each kernel's name and its parameters
(cuKernelGetParamInfo: result code, offset, size, up to the first index
the driver refuses), asked through ctypes without bindthem; then each image
loaded and bound by bindthem.cuda.load, its error printed whole.

    python tests/cuda/gpu/probe_driver.py OUTDIR   (build_kernels.py's OUTDIR)
"""

import ctypes
import json
import os
import sys
import traceback

import numpy as np


def driver_view(path, cu):
    lib, n = ctypes.c_void_p(), ctypes.c_uint()
    image = open(path, "rb").read()
    r = cu.cuLibraryLoadData(ctypes.byref(lib), image, None, None, 0, None, None, 0)
    print("cuLibraryLoadData(%s) -> %d" % (os.path.basename(path), r))
    if r:
        return
    r = cu.cuLibraryGetKernelCount(ctypes.byref(n), lib)
    kernels = (ctypes.c_void_p * n.value)()
    r2 = cu.cuLibraryEnumerateKernels(kernels, n, lib)
    print("  %d kernels (%d, %d)" % (n.value, r, r2))
    for k in kernels:
        name = ctypes.c_char_p()
        cu.cuKernelGetName(ctypes.byref(name), ctypes.c_void_p(k))
        params = []
        for i in range(40):
            off, size = ctypes.c_size_t(), ctypes.c_size_t()
            r = cu.cuKernelGetParamInfo(ctypes.c_void_p(k), ctypes.c_size_t(i), ctypes.byref(off),
                                        ctypes.byref(size))
            if r:
                params.append("[%d]: rc %d" % (i, r))
                break
            params.append("%d@%d" % (size.value, off.value))
        print("  %s: %s" % (name.value.decode(), " ".join(params)))


def main(outdir):
    with open(os.path.join(outdir, "manifest.json")) as f:
        man = json.load(f)
    import bindthem.cuda as cuda

    print("driver", cuda.driver())
    cuda.to_device(np.zeros(1))  # a current context
    cu = ctypes.CDLL(cuda.driver()["path"])
    for key, header, yml in (("module", man["header"], man["instantiate"]),
                             ("features", os.path.join(os.path.dirname(man["header"]),
                                                       "gpu_features.cuh"), None),
                             ("launch", os.path.join(os.path.dirname(man["header"]),
                                                     "gpu_launch.cuh"), None)):
        if yml is None:
            yml = header[:-len(".cuh")] + ".yml"
        try:
            driver_view(man[key], cu)
        except Exception:
            traceback.print_exc(file=sys.stdout)
        try:
            lib = cuda.load(man[key], header, yml)
            print("  bindthem.cuda.load: binds %s" % ", ".join(lib.__all__))
        except Exception:
            print("  bindthem.cuda.load failed:")
            traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
