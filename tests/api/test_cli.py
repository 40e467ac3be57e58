"""`python -m bindthem show`: each function's Python call (size parameters
dropped), overloads as C signatures, the docstring's first line, unbound
functions with reasons; exit status 2 with file:line:col on a bad input."""

import os
import subprocess
import sys

import pytest

from sources import ROOT
from support import python_env

from bindthem.__main__ import main

EX_H = os.path.join(ROOT, "examples", "myheader.h")
EX_Y = os.path.join(ROOT, "examples", "instantiate.yml")
BAD = os.path.join(ROOT, "tests", "data", "bad_headers")


def show(capsys, *argv):
    rc = main(["show"] + list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def cli(*argv):
    env = python_env()
    return subprocess.run([sys.executable, "-m", "bindthem"] + list(argv), capture_output=True,
                          text=True, env=env, timeout=120)


def test_show_readme_example():
    r = cli("show", EX_H, "-i", EX_Y)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (
        "myfunc(J, x, y, a)  (2 overloads)\n"
        "    My Function\n"
        "    int myfunc<int, double, std::complex<double>>(const int J[], const int J_size, "
        "double x[], const int x_size, std::complex<double> y[], const int y_size, double a)\n"
        "    int myfunc<int, float, std::complex<float>>(const int J[], const int J_size, "
        "float x[], const int x_size, std::complex<float> y[], const int y_size, double a)\n"
        "\n")


def test_show_without_yaml_lists_unbound(capsys):
    rc, out, err = show(capsys, EX_H)
    assert (rc, err) == (0, "")
    assert out == "unbound functions:\n    myfunc (line 25): templated; needs instantiate.yml\n"


def test_show_strict_missing(capsys, tmp_path):
    y = tmp_path / "i.yml"
    y.write_text("- types:\n    - [int, double, double]\n  functions:\n    - myfunc\n"
                 "    - elsewhere\n")
    rc, out, err = show(capsys, EX_H, "-i", str(y))
    assert rc == 0
    assert out.endswith("listed in %s but not in this header: elsewhere\n" % y)
    rc, out, err = show(capsys, EX_H, "-i", str(y), "--strict")
    assert (rc, out) == (2, "")
    assert err == ("error: %s:5:7: 'elsewhere' is listed in instantiate.yml but not declared "
                   "in %s\n" % (y, EX_H))


@pytest.mark.parametrize("name,loc", [("missing_comma.h", "2:21"), ("unterminated_comment.h",
                                                                     "2:3")])
def test_show_bad_header_exits_2(name, loc):
    """--strict: the unreadable declaration is the error; without it, the
    declaration is listed as not bound, with its file:line:col."""
    path = os.path.join(BAD, name)
    r = cli("show", path)
    assert r.returncode == 0, r.stderr
    assert "cannot read the declaration: %s:%s: " % (path, loc) in r.stdout
    r = cli("show", path, "--strict")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: %s:%s: " % (path, loc))
    assert r.stderr.count("\n") == 1     # one line, no traceback


def test_show_missing_file_exits_2(capsys, tmp_path):
    rc, out, err = show(capsys, str(tmp_path / "nope.h"))
    assert (rc, out) == (2, "")
    assert err.startswith("error: ") and "No such file or directory" in err


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["show"])
    assert ei.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.pyamg
def test_show_pyamg(capsys):
    from pyamg_sdist import amg_core_or_skip
    core = amg_core_or_skip()
    yml = os.path.join(core, "instantiate.yml")
    rc, out, err = show(capsys, os.path.join(core, "relaxation.h"), "-i", yml)
    assert (rc, err) == (0, "")
    blocks = out.split("\n\n")
    gs = blocks[0].splitlines()
    assert gs[0] == ("gauss_seidel(Ap, Aj, Ax, x, b, row_start, row_stop, row_step)  "
                     "(8 overloads)")
    assert gs[1] == "    Gauss-Seidel iteration."
    assert gs[2] == ("    void gauss_seidel<int, float, float>(const int Ap[], const int Ap_size, "
                     "const int Aj[], const int Aj_size, const float Ax[], const int Ax_size, "
                     "float x[], const int x_size, const float b[], const int b_size, "
                     "const int row_start, const int row_stop, const int row_step)")
    assert gs[6].startswith("    void gauss_seidel<long, float, float>(const long Ap[], ")
    assert len(gs) == 10
    assert "sor_gauss_seidel(Ap, Aj, Ax, x, b, row_start, row_stop, row_step, omega)  " \
        "(8 overloads)\n    SOR iteration.\n" in out
    assert out.count("  (8 overloads)\n") == 16
    # relaxation.h binds everything it declares; the YAML's other names are listed
    last = out.rstrip("\n").splitlines()[-1]
    assert last.startswith("listed in %s but not in this header: " % yml)
    assert "print_it" in last and "gauss_seidel," not in last

    rc, out, err = show(capsys, os.path.join(core, "linalg.h"), "-i", yml)
    assert (rc, err) == (0, "")
    assert out.startswith("pinv_array(AA, m, n, TransA)  (8 overloads)\n    Replace each block "
                          "of A with a Moore-Penrose pseudoinverse of that block.\n    void "
                          "pinv_array<int, float, float>(float AA[], const int AA_size, "
                          "const int m, const int n, const char TransA)\n")
    unbound = out.split("unbound functions:\n")[1].splitlines()
    assert "    signof (line 18): inline/static; not exported by the library" in unbound
    assert "    conjugate (line 32): inline/static; not exported by the library" \
        in unbound
    assert "    QR (line 1173): unbindable: unknown type 'std::vector<T>' of return value" \
        in unbound
    assert any(u.startswith("    dot_prod (line 167): unbindable: parameter 'x' is a pointer "
                            "with no 'x_size' after it") for u in unbound)
