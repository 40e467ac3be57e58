"""Build of bindthem._core: C11 against CPython, NumPy, libffi and libyaml.

Switches (environment variables):
  BINDTHEM_DEBUG=1          -O0 -g, asserts on
  BINDTHEM_SANITIZE=address (or address,undefined) build with sanitizers (and an
                            arena that gives each allocation its own block)
  BINDTHEM_COVERAGE=1       gcov instrumentation
  BINDTHEM_WERROR=1         warnings are errors (CI builds this way)
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from glob import glob

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

APT = {"libffi": "libffi-dev", "yaml-0.1": "libyaml-dev"}
HEADERS = {"libffi": "ffi.h", "yaml-0.1": "yaml.h"}
FALLBACK_LIBS = {"libffi": ["ffi"], "yaml-0.1": ["yaml"]}


def pkg_config(pkg):
    """(include_dirs, library_dirs, libraries) from pkg-config, or fallbacks."""
    if shutil.which("pkg-config"):
        try:
            cflags = subprocess.check_output(
                ["pkg-config", "--cflags", pkg], stderr=subprocess.DEVNULL, text=True).split()
            libs = subprocess.check_output(
                ["pkg-config", "--libs", pkg], stderr=subprocess.DEVNULL, text=True).split()
            return ([f[2:] for f in cflags if f.startswith("-I")],
                    [f[2:] for f in libs if f.startswith("-L")],
                    [f[2:] for f in libs if f.startswith("-l")])
        except subprocess.CalledProcessError:
            pass
    return [], [], FALLBACK_LIBS[pkg]


def c_compiler():
    """The C compiler setuptools will use, as an argument list."""
    return (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()


def probe(source, suffix, include_dirs=()):
    """Whether the C compiler accepts source (a file of that suffix)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe" + suffix)
        with open(src, "w") as f:
            f.write(source)
        cmd = c_compiler() + ["-fsyntax-only"] + ["-I" + d for d in include_dirs] + [src]
        try:
            return subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
        except OSError:
            return False


def check_compilers():
    """Fail the build in one sentence when there is no C or C++ compiler, or
    no Python.h for the Python that runs the build."""
    cc = c_compiler()
    if not shutil.which(cc[0]):
        sys.exit("bindthem: no C compiler (`%s` not found); install one with "
                 "`apt-get install gcc g++`, or set CC." % cc[0])
    if not probe("int main(void) { return 0; }\n", ".c"):
        sys.exit("bindthem: the C compiler `%s` does not work; install one with "
                 "`apt-get install gcc g++`, or set CC." % " ".join(cc))
    # csrc/core/bt_guard.cpp is C++; setuptools compiles it with the same driver.
    if not probe("#include <exception>\nint main() { return 0; }\n", ".cpp"):
        sys.exit("bindthem: `%s` cannot compile C++ (csrc/core/bt_guard.cpp); install it "
                 "with `apt-get install g++`." % " ".join(cc))
    inc = sysconfig.get_paths()["include"]
    if not probe("#include <Python.h>\nint main(void) { return 0; }\n", ".c", [inc]):
        sys.exit("bindthem: cannot find <Python.h> for Python %s (looked in %s); install "
                 "the headers of the Python that runs the build, e.g. `apt-get install "
                 "python3-dev` for Debian's python3." % (sysconfig.get_python_version(), inc))


def check_header(pkg, include_dirs):
    """Fail the build in one sentence when a system header is missing."""
    if not probe("#include <%s>\nint main(void) { return 0; }\n" % HEADERS[pkg], ".c",
                 include_dirs):
        sys.exit("bindthem: cannot find <%s>; install it with `apt-get install %s`."
                 % (HEADERS[pkg], APT[pkg]))


def layer_dirs():
    """The folders under csrc/, one per layer (csrc/README.md; tests/core/c/layers.py
    names them). Every one is compiled and on the include path. A source or
    header in csrc/ itself is in no layer: the build stops and says so."""
    stray = sorted(p for p in glob("csrc/*") if os.path.isfile(p) and not p.endswith(".md"))
    dirs = sorted(p for p in glob("csrc/*") if os.path.isdir(p))
    if stray:
        sys.exit("bindthem: %s %s in no layer folder; move %s into one of %s "
                 "(csrc/README.md says which layer is which)."
                 % (", ".join(stray), "is" if len(stray) == 1 else "are",
                    "it" if len(stray) == 1 else "them", ", ".join(d + "/" for d in dirs)))
    return dirs


check_compilers()
LAYER_DIRS = layer_dirs()
include_dirs = LAYER_DIRS + [numpy.get_include()]
library_dirs = []
libraries = []
for pkg in ("libffi", "yaml-0.1"):
    inc, libdirs, libs = pkg_config(pkg)
    check_header(pkg, inc)
    include_dirs += inc
    library_dirs += libdirs
    libraries += libs
libraries += ["dl", "stdc++"]

extra_compile = ["-fvisibility=hidden", "-Wall", "-Wextra",
                 "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
extra_link = []
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if os.environ.get("BINDTHEM_DEBUG"):
    extra_compile += ["-O0", "-g3", "-UNDEBUG"]
else:
    extra_compile += ["-O2"]
san = os.environ.get("BINDTHEM_SANITIZE")
if san:
    extra_compile += ["-fsanitize=" + san, "-fno-omit-frame-pointer", "-g"]
    extra_link += ["-fsanitize=" + san]
    if "address" in san:
        macros.append(("BT_ARENA_EXACT", "1"))  # one block per allocation: ASan sees overflows
if os.environ.get("BINDTHEM_WERROR"):
    extra_compile += ["-Werror"]
if os.environ.get("BINDTHEM_COVERAGE"):
    extra_compile += ["--coverage", "-O0"]
    extra_link += ["--coverage"]



def cpu_count():
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class BuildExt(build_ext):
    """C11 for the .c files; C++11 for csrc/core/bt_guard.cpp, the one C++ file
    (it catches C++ exceptions thrown by kernels). The sources compile on every
    CPU at once (a compiler process each), then link as one."""

    def build_extensions(self):
        compiler = self.compiler
        compile_one = compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
            std = ["-std=c++11"] if src.endswith(".cpp") else ["-std=c11"]
            return compile_one(obj, src, ext, cc_args, std + extra_postargs, pp_opts)

        def compile_all(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                        extra_preargs=None, extra_postargs=None, depends=None):
            # distutils' CCompiler.compile, with the objects compiled concurrently
            macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
            todo = [(obj,) + build[obj] for obj in objects if obj in build]
            with ThreadPoolExecutor(max(1, min(cpu_count(), len(todo)))) as pool:
                for done in [pool.submit(_compile, obj, src, ext, cc_args, extra_postargs,
                                         pp_opts) for obj, src, ext in todo]:
                    done.result()  # the first compile error, as a serial build says it
            return objects

        compiler._compile = _compile
        compiler.compile = compile_all
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "bindthem._core",
            sources=sorted(p for d in LAYER_DIRS for p in glob(d + "/*.c") + glob(d + "/*.cpp")),
            depends=sorted(p for d in LAYER_DIRS for p in glob(d + "/*.h")),
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            libraries=libraries,
            define_macros=macros,
            extra_compile_args=extra_compile,
            extra_link_args=extra_link,
        )
    ],
)
