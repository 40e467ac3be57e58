"""nvcc for bindthem.cuda: finding nvcc, the architectures it builds for, its flags."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import warnings
from importlib import resources

from ...errors import BindTypeError, BindValueError, BuildError
from ..cache import flag_list
from ..compile.source import PRELUDE as HOST_PRELUDE

# The range bindthem compiles for by default: Volta to Hopper, plus PTX for
# the newest of them so that later GPUs JIT it. Archs the nvcc at hand no
# longer supports are left out (CUDA 13 dropped sm_70; it starts at sm_75).
DEFAULT_ARCHS = (70, 75, 80, 86, 89, 90)
DEFAULT_FLAGS = ("-O3",)
# libstdc++'s std::complex operators are host functions, constexpr from
# C++20 on: nvcc calls constexpr host functions from device code with
# --expt-relaxed-constexpr. So C++20 where nvcc has it (12.0+), else C++17;
# a -std= of the caller's wins.
NVCC_RELAXED = "--expt-relaxed-constexpr"
# What nvcc compiles before the header: the CPU build's standard prelude, after
# the data file nvcc_complex.cuh, which gives the device pass a std::complex
# that computes (libstdc++'s arithmetic on GCC's __complex__ types compiles to
# nothing in device code: a * x came out as a) with libstdc++'s layout and name.
NVCC_PRELUDE = (resources.files(__package__).joinpath("nvcc_complex.cuh").read_text(
    encoding="utf-8") + HOST_PRELUDE)


def _find_nvcc(nvcc=None):
    cand = _nvcc_candidate(nvcc)
    if not _exists(cand):
        raise BuildError("cannot find nvcc (pass nvcc=, or set $NVCC or $CUDA_HOME; or build "
                         "with compiler='nvrtc', which needs no nvcc)", output="",
                         command=[cand])
    return cand


def _exists(cand):
    """Whether nvcc candidate cand is a path that exists or a name on PATH."""
    return bool(os.path.exists(cand) or shutil.which(cand))


def _nvcc_candidate(nvcc=None):
    cand = nvcc or os.environ.get("NVCC") or shutil.which("nvcc")
    if not cand:
        cand = os.path.join(_cuda_home(), "bin", "nvcc")
    return cand


def _cuda_home():
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"


@functools.lru_cache(maxsize=None)
def _nvcc_info(nvcc):
    """(nvcc --version text, sorted supported compute capabilities)."""
    try:
        ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=120)
        archs = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True,
                               timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError("cannot run %s: %s" % (nvcc, e), output=str(e), command=[nvcc]) from None
    caps = sorted({int(m) for m in re.findall(r"compute_(\d+)", archs.stdout)})
    return ver.stdout + ver.stderr, tuple(caps)


def _nvcc_required(version):
    """The flags every nvcc build gets: C++20 (12.0+) or C++17, and relaxed
    constexpr (for std::complex's operators in device code)."""
    m = re.search(r"release (\d+)\.", version)
    return ["-std=c++20" if m and int(m.group(1)) >= 12 else "-std=c++17", NVCC_RELAXED]


def _arch_items(arch):
    """[(compute capability, 'sm' or 'compute')] from arch= (80, "sm_80",
    "compute_80", or a list of those)."""
    items = [arch] if isinstance(arch, (int, str)) else list(arch)
    out = []
    for a in items:
        m = re.fullmatch(r"(sm_|compute_)?(\d+)[af]?", str(a))
        if not m:
            raise BindValueError("arch=%r: expected an int like 80 or 'sm_80'" % (a,))
        out.append((int(m.group(2)), "compute" if m.group(1) == "compute_" else "sm"))
    return out


def _unsupported(caps, supported, who):
    bad = [a for a in caps if supported and a not in supported]
    if bad:
        raise BuildError("this %s does not support %s (it supports %s)"
                         % (who, ", ".join("sm_%d" % a for a in bad),
                            ", ".join("sm_%d" % a for a in supported)), output="")


def _archs(arch, supported):
    """Compute capabilities to build SASS for, from arch= (None, 80, "sm_80",
    "compute_80", or a list of those)."""
    if arch is None:
        chosen = [a for a in DEFAULT_ARCHS if not supported or a in supported]
        if not chosen and supported:
            chosen = [min(supported)]
        return chosen
    out = [c for c, _ in _arch_items(arch)]
    _unsupported(out, supported, "nvcc")
    return sorted(set(out))


def _with_std(required, flags):
    """required + flags, without required's -std= when flags name one."""
    if any(f.startswith(("-std", "--std")) for f in flags):
        required = [f for f in required if not f.startswith("-std")]
    return list(required) + list(flags)


def _nvcc_flags(cxxflags, extra_cxxflags, flags, where):
    """nvcc's flags from ``cxxflags=`` (replaces ``-O3``) and ``extra_cxxflags=``
    (appended), the names bindthem.build has; None for the default.
    ``flags=`` is the old name of ``cxxflags=``, deprecated."""
    if flags is not None:
        if cxxflags is not None:
            raise BindTypeError("bindthem.cuda.%s(): cxxflags= and flags= both given; flags= is "
                            "the deprecated name of cxxflags=, pass that alone" % where)
        warnings.warn("bindthem.cuda.%s(flags=...) is deprecated: the option is called "
                      "cxxflags=, as in bindthem.build (flags= will be removed in the next "
                      "release)" % where, DeprecationWarning, stacklevel=3)
        cxxflags = flags
    if extra_cxxflags is None:
        return cxxflags
    return flag_list(cxxflags, DEFAULT_FLAGS) + flag_list(extra_cxxflags, ())
