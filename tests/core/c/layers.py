"""csrc's layers: the one place that says which folder is which layer.

Every C source of bindthem._core lies in one folder under csrc/, named for its
layer (bottom to top):

    core/    pure C: the metadata pipeline, symbols, the direct call, the guard
    driver/  pure C: libcuda and libnvrtc through dlopen
    py/      Python-facing, CPU and shared (slots, dispatch, binding, calls)
    cuda/    Python-facing CUDA (bt_cudapy_*, bt_nvrtc_py)

A file calls (or reads data of) files of its own layer or of a layer below
it, never above; bt_module, the top, registers every layer. A pure folder's
files include neither Python.h nor a header that does, so tests/core/c (the
C drivers) and tests/fuzz build them without Python. tests/core/test_layout.py
checks the folders and the purity with `gcc -MM`, tests/core/test_file_graph.py
the calls (`nm`). setup.py compiles every folder under csrc/ and refuses a
source in csrc/ itself. Usage from a shell:

    python3 tests/core/c/layers.py sources [--pure] [--ext .c]   # one path a line
    python3 tests/core/c/layers.py includes                      # -I flags
"""

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))  # tests/core/c
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CSRC = os.path.join(ROOT, "csrc")
LAYERS = ("core", "driver", "py", "cuda")  # bottom to top
PURE = ("core", "driver")
TOP = "bt_module"  # exec slot and PyInit__core: calls into every layer, called by none
SOURCE_EXTS = (".c", ".cpp")


def include_dirs():
    """The folders on the include path (every layer: `#include "bt_x.h"`)."""
    return [os.path.join(CSRC, layer) for layer in LAYERS]


def sources(layers=LAYERS, exts=SOURCE_EXTS):
    """{stem: path} of the sources in those layers, with those suffixes."""
    out = {}
    for layer in layers:
        for ext in exts:
            for p in glob.glob(os.path.join(CSRC, layer, "*" + ext)):
                out[os.path.splitext(os.path.basename(p))[0]] = p
    return dict(sorted(out.items()))


def pure_sources(exts=SOURCE_EXTS):
    """{stem: path} of the pure C (and C++) sources."""
    return sources(PURE, exts)


def layer_of(path):
    """The layer folder a csrc path lies in ('' for csrc/ itself)."""
    rel = os.path.relpath(path, CSRC)
    return os.path.dirname(rel)


def may_call(src_layer, dst_layer):
    """Whether a file of src_layer may call a file of dst_layer: its own or below."""
    return LAYERS.index(dst_layer) <= LAYERS.index(src_layer)


def misplaced():
    """Files and folders of csrc/ that are in no layer: a source or header in
    csrc/ itself, or a folder not in LAYERS (csrc/README.md is the map)."""
    out = []
    for p in sorted(glob.glob(os.path.join(CSRC, "*"))):
        name = os.path.basename(p)
        if os.path.isdir(p) and name not in LAYERS:
            out.append(p)
        elif os.path.isfile(p) and name != "README.md":
            out.append(p)
    return out


def main(argv):
    if argv[1:2] == ["includes"]:
        print(" ".join("-I" + d for d in include_dirs()))
        return 0
    if argv[1:2] == ["sources"]:
        rest = argv[2:]
        layers = PURE if "--pure" in rest else LAYERS
        exts = SOURCE_EXTS
        if "--ext" in rest:
            exts = (rest[rest.index("--ext") + 1],)
        for p in sources(layers, exts).values():
            print(p)
        return 0
    print("usage: layers.py sources [--pure] [--ext .c] | includes", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
