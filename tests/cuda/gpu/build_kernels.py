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

    python tests/cuda/gpu/build_kernels.py OUTDIR --from CARRIED

takes CARRIED's build (made beforehand where nvcc is, e.g. with
tests/cuda/gpu/prepare_device.sh into build/gpu-kernels, and carried to the
device) when its source hash is this tree's: a hash of every header and
YAML, the .cu source bindthem makes of them, launch_floor.c and this file;
launch_floor.so is rebuilt when the carried one does not load. Else
(absent, stale) it builds as above.
"""

import ctypes
import hashlib
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
SOURCES = ((HEADER, YAML), (FEATURES, FEATURES_YAML), (LAUNCH, LAUNCH_YAML))
BUILT = ("module", "cubin_sm75", "cubin_sm90", "ptx", "features", "launch", "launch_floor")


def source_hash(cuda):
    """What the build is made of, the same on any machine for the same tree."""
    h = hashlib.sha256()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    for header, yml in SOURCES:
        for path in (header, yml):
            h.update(open(path, "rb").read())
        h.update(cuda.kernel_source(header, yml).replace(repo, "<repo>").encode())
    for path in (os.path.join(HERE, "launch_floor.c"), os.path.abspath(__file__)):
        h.update(open(path, "rb").read())
    return h.hexdigest()


def _loads(path):
    try:
        ctypes.CDLL(path)
        return True
    except OSError as e:
        print("build: %s does not load here (%s): rebuilt" % (path, e))
        return False


def reuse(carried, outdir):
    """The manifest of carried's build copied into outdir, or None (said why)."""
    import bindthem.cuda as cuda

    try:
        with open(os.path.join(carried, "manifest.json")) as f:
            man = json.load(f)
    except (OSError, ValueError) as e:
        print("build: no carried build in %s (%s): building here" % (carried, e))
        return None
    want = source_hash(cuda)
    if man.get("source_hash") != want:
        print("build: the carried build in %s is stale (source hash %s, this tree's %s): "
              "building here" % (carried, man.get("source_hash"), want))
        return None
    os.makedirs(outdir, exist_ok=True)
    for key in BUILT:
        name = os.path.basename(man[key])
        if not os.path.exists(os.path.join(carried, name)):
            print("build: the carried build lacks %s: building here" % name)
            return None
        shutil.copy(os.path.join(carried, name), outdir)
        man[key] = os.path.join(outdir, name)
    if not _loads(man["launch_floor"]):
        man["launch_floor"] = _launch_floor(outdir)
    man.update(header=HEADER, instantiate=YAML, reused_from=os.path.abspath(carried))
    man["compiler"] += " (built beforehand, carried)"
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("build: kernels carried from %s (source hash %s)" % (carried, want[:12]))
    return man


def _launch_floor(outdir):
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        sys.exit("build: FAILED: no C compiler (gcc) for launch_floor.c")
    exe = os.path.join(outdir, "launch_floor.so")
    subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC",
                    os.path.join(HERE, "launch_floor.c"), "-o", exe, "-ldl"], check=True)
    return exe


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
    man["launch_floor"] = _launch_floor(outdir)
    man["source_hash"] = source_hash(cuda)
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
    elif len(sys.argv) == 4 and sys.argv[2] == "--from":
        if reuse(sys.argv[3], sys.argv[1]) is None:
            build(sys.argv[1])
    else:
        sys.exit(__doc__)
