"""csrc's layout: every file in a layer folder, the pure folders pure.

tests/core/c/layers.py is the one list of layers; setup.py, the C drivers, the
fuzz build and the link-graph test (tests/core/test_file_graph.py) read the
folders. Here: nothing lies outside a layer, a pure file includes neither
Python.h nor NumPy nor a Python-facing header (`gcc -M`, so an include
through any header counts), and the build refuses a stray source."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "c"))
import layers  # noqa: E402

CC = os.environ.get("CC", "gcc")
needs_cc = pytest.mark.skipif(not shutil.which(CC) or not shutil.which("g++"),
                              reason="needs gcc and g++")


def pure_files():
    """Every source and header of the pure layers."""
    return layers.sources(layers.PURE, layers.SOURCE_EXTS + (".h",))


def includes_of(path):
    """Every file path includes, through any header (gcc -M; a header it cannot
    find is listed by name, -MG)."""
    import numpy

    cpp = path.endswith(".cpp")
    cmd = ["g++" if cpp else CC, "-std=c++11" if cpp else "-std=c11", "-M", "-MG"]
    cmd += ["-I" + d for d in layers.include_dirs()]
    cmd += ["-I" + sysconfig.get_paths()["include"], "-I" + numpy.get_include(), path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    deps = out.replace("\\\n", " ").split(":", 1)[1].split()
    return [d for d in deps if os.path.abspath(d) != os.path.abspath(path)]


def impurities(path):
    """What a pure file must not include: Python.h, NumPy, a non-pure csrc header."""
    bad = []
    for d in includes_of(path):
        full = os.path.abspath(d)
        if os.path.basename(d) == "Python.h" or "numpy" in d.split(os.sep):
            bad.append(d)
        elif full.startswith(layers.CSRC + os.sep) and layers.layer_of(full) not in layers.PURE:
            bad.append(d)
    return bad


def test_every_csrc_file_is_in_a_layer_folder():
    stray = [os.path.relpath(p, layers.ROOT) for p in layers.misplaced()]
    assert stray == [], ("in no layer folder: %s; put each in one of csrc/%s (csrc/README.md "
                         "says which)" % (stray, ", csrc/".join(layers.LAYERS)))


def test_misplaced_names_a_stray_file_and_an_unknown_folder(tmp_path, monkeypatch):
    for layer in layers.LAYERS:
        (tmp_path / layer).mkdir()
    (tmp_path / "core" / "bt_ok.c").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / "bt_new.c").write_text("")
    (tmp_path / "misc").mkdir()
    monkeypatch.setattr(layers, "CSRC", str(tmp_path))
    assert layers.misplaced() == [str(tmp_path / "bt_new.c"), str(tmp_path / "misc")]


def test_pure_layers_hold_the_pipeline_and_the_drivers():
    pure = pure_files()
    assert {"bt_lex", "bt_parse", "bt_yaml", "bt_direct", "bt_guard", "bt_cuda",
            "bt_nvrtc"} <= set(pure)
    assert not {"bt_slot", "bt_state", "bt_module", "bt_nvrtc_py"} & set(pure)


@needs_cc
def test_pure_files_include_no_python():
    bad = {os.path.relpath(p, layers.ROOT): impurities(p) for p in pure_files().values()}
    assert {k: v for k, v in bad.items() if v} == {}


@needs_cc
def test_impurity_through_a_header_is_seen(tmp_path):
    # a pure-looking file that reaches Python.h only through a Python-facing header
    src = tmp_path / "bt_sneaky.c"
    src.write_text('#include "bt_arena.h"\n#include "bt_opts.h"\nint x;\n')
    bad = impurities(str(src))
    assert any(d.endswith(os.path.join("py", "bt_opts.h")) for d in bad), bad
    assert any(os.path.basename(d) == "Python.h" for d in bad), bad
    clean = tmp_path / "bt_clean.c"
    clean.write_text('#include "bt_lex.h"\nint y;\n')
    assert impurities(str(clean)) == []


def test_sources_cli_lists_the_pure_c_files():
    # what tests/fuzz/build.sh links
    r = subprocess.run([sys.executable, os.path.join(layers.HERE, "layers.py"),
                        "sources", "--pure", "--ext", ".c"], capture_output=True, text=True,
                       check=True)
    assert r.stdout.split() == list(layers.pure_sources((".c",)).values())
    assert all(layers.layer_of(p) in layers.PURE and p.endswith(".c") for p in r.stdout.split())


@needs_cc
def test_setup_refuses_a_source_outside_the_layers(tmp_path):
    pytest.importorskip("setuptools")
    shutil.copy(os.path.join(layers.ROOT, "setup.py"), tmp_path / "setup.py")
    (tmp_path / "csrc" / "core").mkdir(parents=True)
    (tmp_path / "csrc" / "README.md").write_text("")
    (tmp_path / "csrc" / "bt_new.c").write_text("")
    r = subprocess.run([sys.executable, "setup.py", "--name"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == (
        "bindthem: csrc/bt_new.c is in no layer folder; move it into one of csrc/core/ "
        "(csrc/README.md says which layer is which).")
