"""Builds what the device check needs, with what the machine has; no network.

    python tests/cuda/gpu/build_kernels.py OUTDIR

Kernels of gpu_kernels.cuh: with nvcc a fatbin (sm_75/80/90 + PTX), else
with NVRTC (a PTX the driver JITs for the device), else the fatbin made
beforehand and carried in tests/cuda/gpu/prebuilt/ (make_prebuilt(), run where
nvcc is). Also a CUBIN for sm_75 and one for sm_90 (the load-error test
picks the one the device cannot run), PTX for compute_75, gpu_features.cuh
and gpu_launch.cuh (nvcc or NVRTC), and launch_floor.so (gcc: the direct
cuLaunchKernel loop the overhead test loads). Writes OUTDIR/manifest.json;
exits non-zero, saying why, when a piece cannot be built.
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "gpu_kernels.cuh")
YAML = os.path.join(HERE, "gpu_kernels.yml")
PREBUILT = os.path.join(HERE, "prebuilt")
FEATURES = os.path.join(HERE, "gpu_features.cuh")
FEATURES_YAML = os.path.join(HERE, "gpu_features.yml")
LAUNCH = os.path.join(HERE, "gpu_launch.cuh")
LAUNCH_YAML = os.path.join(HERE, "gpu_launch.yml")
ARCHS = (75, 80, 90)


def _nvcc_cubin(cuda, nvcc, out, target):
    src = out + ".cu"
    with open(src, "w") as f:
        f.write(cuda.kernel_source(HEADER, YAML))
    flag = {"cubin": "-arch=sm_%d", "ptx": "-arch=compute_%d"}
    kind, cap = target
    subprocess.run([nvcc, "-" + kind, flag[kind] % cap, "-std=c++20",
                    "--expt-relaxed-constexpr", "-O3", src, "-o", out], check=True)
    os.unlink(src)


def build(outdir):
    import bindthem.cuda as cuda

    os.makedirs(outdir, exist_ok=True)
    cache = os.path.join(outdir, "cache")
    man = {"header": HEADER, "instantiate": YAML}
    names = {"module": None, "cubin_sm75": "gpu_kernels.sm_75.cubin",
             "cubin_sm90": "gpu_kernels.sm_90.cubin", "ptx": "gpu_kernels.compute_75.ptx"}
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    nvrtc = None
    if not nvcc:
        try:
            nvrtc = cuda.find_nvrtc()[0]
        except Exception as e:  # BuildError: none here
            print("build: no NVRTC either: %s" % str(e).splitlines()[0])
    if nvcc:
        man["compiler"] = "nvcc " + nvcc
        man["module"] = cuda.compile_fatbin(HEADER, YAML, arch=ARCHS, cache_dir=cache,
                                            output=os.path.join(outdir, "gpu_kernels.fatbin"))
        _nvcc_cubin(cuda, nvcc, os.path.join(outdir, names["cubin_sm75"]), ("cubin", 75))
        _nvcc_cubin(cuda, nvcc, os.path.join(outdir, names["cubin_sm90"]), ("cubin", 90))
        _nvcc_cubin(cuda, nvcc, os.path.join(outdir, names["ptx"]), ("ptx", 75))
    elif nvrtc:
        man["compiler"] = "nvrtc " + nvrtc
        man["module"] = cuda.compile_nvrtc(HEADER, YAML, cache_dir=cache,
                                           output=os.path.join(outdir, "gpu_kernels.ptx"))
        for key, arch in (("cubin_sm75", 75), ("cubin_sm90", 90), ("ptx", "compute_75")):
            cuda.compile_nvrtc(HEADER, YAML, arch=arch, cache_dir=cache,
                               output=os.path.join(outdir, names[key]))
    elif os.path.exists(os.path.join(PREBUILT, "gpu_kernels.fatbin")):
        man["compiler"] = "prebuilt (tests/cuda/gpu/prebuilt: neither nvcc nor NVRTC here)"
        for name in ["gpu_kernels.fatbin"] + [v for v in names.values() if v]:
            shutil.copy(os.path.join(PREBUILT, name), outdir)
        man["module"] = os.path.join(outdir, "gpu_kernels.fatbin")
    else:
        sys.exit("build: FAILED: no nvcc, no libnvrtc and no tests/cuda/gpu/prebuilt/: nothing "
                 "can compile the kernels")
    for key in ("cubin_sm75", "cubin_sm90", "ptx"):
        man[key] = os.path.join(outdir, names[key])
    # launch attributes and module globals (test_gpu_features.py), the launch
    # API, __half and static kernels (test_gpu.py): built here, so that a
    # compile error fails the build step (never a skip)
    for key, header, yml in (("features", FEATURES, FEATURES_YAML),
                             ("launch", LAUNCH, LAUNCH_YAML)):
        stem = os.path.join(outdir, os.path.basename(header)[:-4])
        if nvcc:
            man[key] = cuda.compile_fatbin(header, yml, arch=ARCHS, cache_dir=cache,
                                           output=stem + ".fatbin")
        elif nvrtc:
            man[key] = cuda.compile_nvrtc(header, yml, cache_dir=cache, output=stem + ".ptx")
        else:
            sys.exit("build: FAILED: %s needs nvcc or NVRTC" % os.path.basename(header))
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    man["launch_floor"] = None
    if cc:
        exe = os.path.join(outdir, "launch_floor.so")
        subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC",
                        os.path.join(HERE, "launch_floor.c"), "-o", exe, "-ldl"], check=True)
        man["launch_floor"] = exe
    else:
        sys.exit("build: FAILED: no C compiler (gcc) for launch_floor.c")
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("build: kernels by %s -> %s" % (man["compiler"], man["module"]))
    return man


def make_prebuilt():
    """Refreshes tests/cuda/gpu/prebuilt/ (run on a machine with nvcc; commit the result)."""
    man = build(os.path.join(PREBUILT, ".work"))
    os.makedirs(PREBUILT, exist_ok=True)
    for key in ("module", "cubin_sm75", "cubin_sm90", "ptx"):
        shutil.copy(man[key], PREBUILT)
    shutil.rmtree(os.path.join(PREBUILT, ".work"))


if __name__ == "__main__":
    if sys.argv[1:] == ["--prebuilt"]:
        make_prebuilt()
    elif len(sys.argv) == 2:
        build(sys.argv[1])
    else:
        sys.exit(__doc__)
