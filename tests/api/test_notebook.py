"""bindthem in Jupyter, executed in a real kernel (nbclient + ipykernel).

``%load_ext bindthem``, the ``%%bindthem`` cell magic (binding, rebinding an
edited cell, compiler and dialect errors reported at the cell's lines), the
rich display of Libraries and Functions, ``f?``/``f??``, the status line of
long builds, and ``examples/notebook.ipynb`` run headless. The kernel runs
this interpreter (a kernelspec written to a temporary folder names
sys.executable) and imports the bindthem under test (tests/support/support.py).
"""

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap

import pytest

from jupyter_session import ANSI, TIMEOUT, Session, errors, notebook_client, results, stderr, stdout
from sources import ROOT
from support import python_env

import bindthem

EXAMPLE = os.path.join(ROOT, "examples", "notebook.ipynb")

SPMV = """\
// y += A x for a CSR matrix A with n_row rows.
template <class I, class T>
void csr_matvec(const I n_row,
                const I Ap[], const int Ap_size,
                const I Aj[], const int Aj_size,
                const T Ax[], const int Ax_size,
                const T x[], const int x_size,
                      T y[], const int y_size)
{
    for (I i = 0; i < n_row; i++) {
        T sum = y[i];
        for (I jj = Ap[i]; jj < Ap[i + 1]; jj++)
            sum += Ax[jj] * x[Aj[jj]];
        y[i] = sum;
    }
}

// A helper template: no -t has one type, so it stays unbound.
template <class T> T twice_of(T v) { return v + v; }

// Twice a.
int twice(int a) { return twice_of(a); }
"""

# The edit: y += alpha A x, alpha a new parameter.
SPMV_ALPHA = SPMV.replace("y += A x", "y += alpha A x").replace(
    "const T x[], const int x_size,", "const T alpha, const T x[], const int x_size,").replace(
    "y[i] = sum;", "y[i] = y[i] + alpha * (sum - y[i]);")

CHECK = """\
import json
import numpy as np
import scipy.sparse as sp
A = sp.random(300, 200, density=0.05, format="csr", random_state=1)
x = np.random.default_rng(2).standard_normal(200)
"""


def _need_jupyter():
    """Skips without the kernel and client (the test extra has them)."""
    for name in ("ipykernel", "nbformat", "nbclient", "jupyter_client"):
        pytest.importorskip(name)


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A kernelspec that starts this interpreter, with the tested bindthem
    first on its path and a fresh build cache."""
    _need_jupyter()
    root = tmp_path_factory.mktemp("kernels")
    spec = root / "bindthem-test"
    spec.mkdir()
    env = {"PYTHONPATH": python_env()["PYTHONPATH"],
           "BINDTHEM_CACHE": str(tmp_path_factory.mktemp("cache")),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bindthem test", "language": "python", "env": env}))
    return str(root)


def page(reply):
    """What ``x?`` shows (the pager payload of the execute reply)."""
    (p,) = [p for p in reply.get("payload", []) if p.get("source") == "page"]
    return ANSI.sub("", p["data"]["text/plain"])


def json_line(outputs):
    return json.loads(stdout(outputs).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def session(kernel_dir, tmp_path_factory):
    import nbformat

    nb = nbformat.v4.new_notebook()
    client = notebook_client(nb, kernel_dir, tmp_path_factory.mktemp("nbcwd"))
    with client.setup_kernel():
        s = Session(client)
        s.run("%load_ext bindthem")
        yield s


@pytest.fixture(scope="module")
def spmv(session):
    """``spmv`` bound by the magic in the session's kernel."""
    out, _ = session.run('%%bindthem spmv -t "int,double" -t "int, float"\n' + SPMV)
    assert results(out, "text/html") == []  # the magic itself displays nothing
    session.run(CHECK)
    return session


# csr_matvec's parameters with the types its two overloads take
TYPED = ("n_row: int, Ap: numpy.typing.NDArray[numpy.int32], "
         "Aj: numpy.typing.NDArray[numpy.int32], "
         "Ax: numpy.typing.NDArray[numpy.float64] | numpy.typing.NDArray[numpy.float32], "
         "x: numpy.typing.NDArray[numpy.float64] | numpy.typing.NDArray[numpy.float32], "
         "y: numpy.typing.NDArray[numpy.float64] | numpy.typing.NDArray[numpy.float32]")


def line_of(text, needle):
    """1-based number of the first line of text that contains needle."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def slow_cxx(folder):
    """A C++ compiler that takes 1.5 s longer than c++ (``--version`` is quick)."""
    path = os.path.join(str(folder), "slowcxx.sh")
    with open(path, "w") as f:
        f.write('#!/bin/sh\ncase "$1" in --version) exec "${CXX:-c++}" "$@";; esac\n'
                'sleep 1.5\nexec "${CXX:-c++}" "$@"\n')
    return path


# --- the extension ---------------------------------------------------------------

def test_kernel_runs_this_python_and_this_bindthem(session):
    out, _ = session.run("import sys, bindthem, json\n"
                         "print(json.dumps([sys.executable, bindthem.__file__]))")
    assert json_line(out) == [sys.executable, bindthem.__file__]


def test_extension_loads(session):
    out, _ = session.run("print('bindthem' in get_ipython().magics_manager.magics['cell'])")
    assert stdout(out).strip() == "True"
    _, reply = session.run("%%bindthem?")
    text = page(reply)
    assert "%bindthem [-t TYPES] [-i YML]" in text and "--openmp" in text


def test_import_does_not_import_ipython():
    code = "import sys, bindthem; print('IPython' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=python_env())
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


# --- binding, rebinding ------------------------------------------------------------

def test_magic_binds_and_matches_scipy(spmv):
    out, _ = spmv.run(
        "y = np.zeros(300)\n"
        "spmv.csr_matvec(300, A.indptr, A.indices, A.data, x, y)\n"
        "y32 = np.zeros(300, dtype=np.float32)\n"
        "spmv.csr_matvec(300, A.indptr, A.indices, A.data.astype(np.float32),\n"
        "                x.astype(np.float32), y32)\n"
        "print(json.dumps({'type': type(spmv).__name__, 'all': spmv.__all__,\n"
        "                  'err': float(np.abs(y - A @ x).max()),\n"
        "                  'err32': float(np.abs(y32 - A @ x).max()),\n"
        "                  'norm': float(np.abs(A @ x).max()), 'twice': spmv.twice(21)}))")
    r = json_line(out)
    assert r["type"] == "Library" and r["all"] == ["csr_matvec", "twice"]
    assert r["norm"] > 0.1 and r["err"] < 1e-13 * r["norm"] and r["err32"] < 1e-5 * r["norm"]
    assert r["twice"] == 42


def test_edited_cell_rebinds_and_the_new_code_runs(spmv):
    spmv.run("old, old_file = spmv.csr_matvec, spmv.__file__")
    out, _ = spmv.run('%%bindthem spmv -t "int,double" -t "int, float"\n' + SPMV_ALPHA)
    out, _ = spmv.run(
        "import inspect\n"
        "y = np.ones(300)\n"
        "spmv.csr_matvec(300, A.indptr, A.indices, A.data, 3.0, x, y)\n"
        "y_old = np.ones(300)\n"
        "old(300, A.indptr, A.indices, A.data, x, y_old)\n"
        "print(json.dumps({'sig': list(inspect.signature(spmv.csr_matvec).parameters),\n"
        "                  'err': float(np.abs(y - (1 + 3 * (A @ x))).max()),\n"
        "                  'old_err': float(np.abs(y_old - (1 + A @ x)).max()),\n"
        "                  'new_file': spmv.__file__ != old_file,\n"
        "                  'doc': spmv.csr_matvec.__doc__}))")
    r = json_line(out)
    assert r["sig"] == ["n_row", "Ap", "Aj", "Ax", "alpha", "x", "y"]
    assert r["err"] < 1e-12 and r["old_err"] < 1e-12  # the old function still works
    assert r["new_file"] and r["doc"] == "y += alpha A x for a CSR matrix A with n_row rows."
    # unchanged again: the cached build, the same library file, nothing displayed
    spmv.run("before = spmv.__file__")
    out, _ = spmv.run('%%bindthem spmv -t "int,double" -t "int, float"\n' + SPMV_ALPHA)
    assert out == []
    out, _ = spmv.run("print(spmv.__file__ == before)")
    assert stdout(out).strip() == "True"
    spmv.run('%%bindthem spmv -t "int,double" -t "int, float"\n' + SPMV)


def test_instantiate_file_openmp_flags_and_local_includes(session):
    session.run("open('opts.yml', 'w').write('- types:\\n    - [long]\\n  functions: [scaled]\\n"
                "- types: null\\n  functions: [threads]\\n')\n"
                "open('opts_local.h', 'w').write('#define OFFSET 3\\n')")
    session.run('%%bindthem opts -i opts.yml --openmp --cxxflags="-O1 -DSCALE=7"\n'
                '#include <omp.h>\n'
                '#include "opts_local.h"\n'
                '// SCALE a + OFFSET, SCALE and OFFSET from the flags and a local header.\n'
                'template <class T> T scaled(T a) { return SCALE * a + OFFSET; }\n'
                '// OpenMP\'s thread count.\n'
                'int threads() { return omp_get_max_threads(); }\n')
    out, _ = session.run("import json\nprint(json.dumps([opts.scaled(2), opts.threads(), "
                         "opts.__all__, opts.scaled.overloads]))")
    scaled, threads, names, overloads = json_line(out)
    assert scaled == 17 and threads >= 1 and names == ["scaled", "threads"]
    assert overloads == ["long scaled<long>(long a)"]


# --- display and introspection --------------------------------------------------------

def test_library_html_lists_functions_and_overloads(spmv):
    out, _ = spmv.run("spmv")
    (html,) = results(out, "text/html")
    assert "<b>bindthem.Library</b>" in html
    assert "<code>csr_matvec(n_row, Ap, Aj, Ax, x, y)</code>" in html
    assert "<code>twice(a)</code>" in html and "twice_of" not in html
    assert "y += A x for a CSR matrix A with n_row rows." in html and "Twice a." in html
    for sig in ("void csr_matvec&lt;int, double&gt;(const int n_row, const int Ap[]",
                "void csr_matvec&lt;int, float&gt;(const int n_row, const int Ap[]",
                "int twice(int a)"):
        assert sig in html
    # the lines of the declarations, in the cell
    assert "spmv.h:%d" % line_of(SPMV, "void csr_matvec(") in html
    assert "spmv.h:%d" % line_of(SPMV, "int twice(") in html
    (text,) = results(out, "text/plain")
    assert text.startswith("bindthem.Library 'spmv': 2 functions")
    assert "void csr_matvec<int, float>(" in text
    assert "twice(a)  # line %d" % line_of(SPMV, "int twice(") in text


def test_function_html_and_pretty(spmv):
    out, _ = spmv.run("spmv.csr_matvec")
    (html,) = results(out, "text/html")
    assert "<b>bindthem function</b> <code>spmv.csr_matvec</code>" in html
    assert html.count("<code>void csr_matvec&lt;int, ") == 2
    assert re.search(r"<code>/\S+/spmv\.h:%d</code>" % line_of(SPMV, "void csr_matvec("), html)
    (text,) = results(out, "text/plain")
    lines = text.splitlines()
    assert lines[0] == ("csr_matvec(n_row, Ap, Aj, Ax, x, y)  "
                        "# bindthem function spmv.csr_matvec, 2 overloads")
    assert lines[1] == "  y += A x for a CSR matrix A with n_row rows."
    assert lines[2].startswith("    void csr_matvec<int, double>(")
    assert lines[4].startswith("  from /")
    assert lines[4].endswith("spmv.h:%d" % line_of(SPMV, "void csr_matvec("))
    assert lines[5].startswith("  library /") and lines[5].endswith(".so")


def test_question_mark_shows_signature_and_overloads(spmv):
    _, reply = spmv.run("spmv.csr_matvec?")
    text = page(reply)
    assert "Signature: csr_matvec(%s) -> None" % TYPED in text
    assert "Call signature" not in text and "*args" not in text
    assert "void csr_matvec<int, double>(" in text and "void csr_matvec<int, float>(" in text
    assert "Docstring: y += A x for a CSR matrix A with n_row rows." in text
    assert re.search(r"Header: +/\S+/spmv\.h:%d" % line_of(SPMV, "void csr_matvec("), text)
    assert "Source" not in text
    # other objects keep IPython's own view
    _, reply = spmv.run("len?")
    assert "Signature: len(obj, /)" in page(reply) and "Overloads" not in page(reply)
    _, reply = spmv.run("spmv?")
    assert "Functions:  \ncsr_matvec(n_row, Ap, Aj, Ax, x, y)\ntwice(a)" in page(reply)
    assert "Type:        bindthem.Library" in page(reply)


def test_double_question_mark_shows_the_kernel_source(spmv):
    _, reply = spmv.run("spmv.csr_matvec??")
    text = page(reply)
    source = text.split("Source:", 1)[1].split("\n", 1)[1]
    # doc comment, template line and body: the cell's first lines, to the brace
    assert source.splitlines() == SPMV.splitlines()[:SPMV.splitlines().index("}") + 1]
    out, _ = spmv.run("import bindthem\nprint(bindthem.getsource(spmv.twice), end='')")
    assert stdout(out) == "// Twice a.\nint twice(int a) { return twice_of(a); }\n"


def test_help_shows_the_python_signature(spmv):
    out, _ = spmv.run("help(spmv.csr_matvec)")
    text = stdout(out)
    assert "csr_matvec(%s) -> None" % TYPED in " ".join(text.split()).replace("( ", "(")
    assert "y += A x for a CSR matrix A with n_row rows." in text


def test_question_mark_without_the_extension_shows_the_types(spmv):
    """IPython's own inspector (its mime hooks emptied: as without %load_ext
    bindthem) shows the typed signature and no ``Call signature: (*args,
    **kwargs)`` beside it."""
    spmv.run("_hooks = get_ipython().inspector.mime_hooks\n"
             "get_ipython().inspector.mime_hooks = {}")
    try:
        _, reply = spmv.run("spmv.csr_matvec?")
    finally:
        spmv.run("get_ipython().inspector.mime_hooks = _hooks")
    text = page(reply)
    assert "Call signature" not in text and "*args" not in text and "Overloads" not in text
    assert "csr_matvec(%s) -> None" % TYPED in " ".join(text.split()).replace(
        "( ", "(").replace(", )", ")")
    assert "y += A x for a CSR matrix A with n_row rows." in text


# --- errors ------------------------------------------------------------------------

BROKEN = """\
// This cell does not compile.
int fine(int a) { return a; }

int broken(int a)
{
    return a + not_declared;
}
"""


def test_compile_error_shows_the_cell_line_and_the_kernel_lives(spmv):
    out, reply = spmv.run("%%bindthem broken\n" + BROKEN, ok=False)
    assert reply["status"] == "error"
    (err,) = errors(out)
    assert err["ename"] == "BuildError"
    tb = "\n".join(ANSI.sub("", line) for line in err["traceback"])
    line = BROKEN.splitlines().index("    return a + not_declared;") + 1
    assert re.search(r"^cell:%d:\d+: error: .*not_declared" % line, tb, re.M), tb
    assert "%%bindthem broken: the compiler failed:" in tb
    assert "Traceback" not in tb and "/cells/" not in tb and ".cpp" not in tb
    assert len(err["traceback"]) < 12
    # the kernel carries on, with the previous bindings
    out, _ = spmv.run("print(spmv.twice(5)); print('broken' in dir())")
    assert stdout(out).split() == ["10", "False"]


def test_dialect_errors_point_at_the_cell(spmv):
    out, _ = spmv.run("%%bindthem bad\n// ok\nint f(int a) { return a; }\n"
                      "int g(int a, ) { return a; }\n", ok=False)
    # a declaration bindthem cannot read is left out (the rest of the cell
    # binds); here the compiler refuses it too, and says where in the cell
    (err,) = errors(out)
    assert err["ename"] == "BuildError"
    assert err["traceback"][:2] == ["%%bindthem bad: the compiler failed:",
                                    "cell:3:14: error: expected identifier before ‘)’ token"]
    out, _ = spmv.run('%%bindthem bad -t "int,quaternion"\n' + SPMV, ok=False)
    (err,) = errors(out)
    assert err["ename"] == "InstantiateError"
    assert err["traceback"][0].startswith(
        "%%bindthem -t 'int,quaternion': unknown type 'quaternion'; known types: void, bool")


def test_usage_errors(spmv):
    for line, msg in [
            ('%%bindthem 3d', "'3d' is not a Python name"),
            ('%%bindthem k -t "int,int,int"', "-t 'int,int,int' gives 3 types, but no templated "
             "function in the cell has 3 template parameters (csr_matvec<I, T>, twice_of<T>)"),
            ('%%bindthem k -t "int,,double"', "expected C++ types separated by commas"),
            ('%%bindthem k -t "int,double" -i x.yml', "takes -t or -i, not both")]:
        src = line if "\n" in line else line + "\n" + SPMV
        out, reply = spmv.run(src, ok=False)
        assert reply["status"] == "error" and reply["ename"] == "UsageError", line
        assert stderr(out).startswith("UsageError: ") and msg in stderr(out), (line, out)


def test_unbindable_functions_are_named(spmv):
    out, _ = spmv.run("%%bindthem notes\n"
                      "int ok(int a) { return a; }\n"
                      "void no_size(double *x) { x[0] = 0; }\n")
    assert stderr(out) == ("%%bindthem notes: warning: cell binds 1 function; 1 declaration is "
                           "not bound:\n  cell:2: no_size: unbindable: parameter 'x' is a "
                           "pointer with no 'x_size' after it\n")
    out, _ = spmv.run("print(notes.__all__)")
    assert stdout(out).strip() == "['ok']"


def test_compiler_warnings_and_extra_flags(spmv):
    out, _ = spmv.run("%%bindthem warned --extra-cxxflags=-Wall\n"
                      "// a, with an unused variable.\n"
                      "int warned(int a) { int unused_here; return a + EXTRA_ONE; }\n"
                      .replace("EXTRA_ONE", "1"))
    err = stderr(out)
    assert err.startswith("%%bindthem warned: warning: the compiler warned while compiling "
                          "warned.h:\n"), err
    assert re.search(r"cell:2:\d+: warning: unused variable .unused_here.", err), err
    out, _ = spmv.run("import bindthem\n"
                      "print(warned.warned(41), bindthem.info(warned).source.flags)")
    first = stdout(out).split("\n")[0]
    assert first.startswith("42 ['-O3', ") and "'-Wall', '-I" in first, first  # kept -O3


# --- long builds ---------------------------------------------------------------------

def test_long_build_status_in_a_notebook(spmv, tmp_path):
    cxx = slow_cxx(tmp_path)
    src = "%%%%bindthem slow --cxx 'sh %s'\n// Slowly.\nint slow(int a) { return a; }\n" % cxx
    out, _ = spmv.run(src)
    (status,) = results(out, "text/plain")
    assert re.fullmatch(r"bindthem: compiling slow\.h with slowcxx\.sh: done after \d+\.\d s",
                        status), status
    out, _ = spmv.run(src)   # cached: quick, silent
    assert out == []


def _build_script(tmp_path):
    header = tmp_path / "k.h"
    header.write_text("int k(int a) { return a + 1; }\n")
    return ("import bindthem\nlib = bindthem.build(%r, cxx='sh %s', cache_dir=%r)\n"
            "print(lib.k(1))\n" % (str(header), slow_cxx(tmp_path), str(tmp_path / "cache")))


def test_long_build_status_on_a_terminal(tmp_path):
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", _build_script(tmp_path)],
                                stdout=subprocess.PIPE, stderr=slave, env=python_env(),
                                text=True)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], TIMEOUT)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:   # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        os.close(master)
    assert proc.returncode == 0 and out == "2\n"
    text = seen.decode()
    assert "\r\x1b[Kbindthem: compiling k.h with slowcxx.sh ... 1 s" in text
    assert re.search(r"\r\x1b\[Kbindthem: compiling k\.h with slowcxx\.sh: done after "
                     r"\d+\.\d s\r?\n$", text), repr(text)


def test_no_status_when_not_interactive(tmp_path):
    r = subprocess.run([sys.executable, "-c", _build_script(tmp_path)], capture_output=True,
                       text=True, env=python_env(), timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout == "2\n" and r.stderr == ""


LOGGED = "import logging\nlogging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s')\n"


def test_status_through_logging_when_not_interactive(tmp_path):
    """Not on a terminal, the status is the "bindthem" logger's: two INFO
    records (at AFTER s, at the end), shown where the program shows INFO."""
    r = subprocess.run([sys.executable, "-c", LOGGED + _build_script(tmp_path)],
                       capture_output=True, text=True, env=python_env(), timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    assert re.fullmatch(r"bindthem: bindthem: compiling k\.h with slowcxx\.sh \.\.\. 1 s\n"
                        r"bindthem: bindthem: compiling k\.h with slowcxx\.sh: done after "
                        r"\d+\.\d s\n", r.stderr), r.stderr


@pytest.mark.parametrize("setting", ["0", "1"])
def test_progress_setting(tmp_path, setting):
    """BINDTHEM_PROGRESS=0: nothing, even where INFO is shown; =1: a line at
    the start and one at the end on stderr, wherever it goes (pip -v, CI)."""
    r = subprocess.run([sys.executable, "-c", LOGGED + _build_script(tmp_path)],
                       capture_output=True, text=True, timeout=TIMEOUT,
                       env=python_env(BINDTHEM_PROGRESS=setting))
    assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    if setting == "0":
        assert r.stderr == ""
    else:
        assert re.fullmatch(r"bindthem: compiling k\.h with slowcxx\.sh \.\.\. 1 s\n"
                            r"bindthem: compiling k\.h with slowcxx\.sh: done after \d+\.\d s\n",
                            r.stderr), r.stderr


def test_status_says_how_far_a_split_build_is(tmp_path):
    header, yml = tmp_path / "t.h", tmp_path / "t.yml"
    header.write_text("template <class T>\nT twice(T a) { return a + a; }\n")
    yml.write_text("- types: [[double], [float], [int], [long]]\n  functions: [twice]\n")
    code = ("import bindthem\nlib = bindthem.build(%r, %r, cxx='sh %s', cache_dir=%r, jobs=2)\n"
            "print(lib.twice(2.0))\n" % (str(header), str(yml), slow_cxx(tmp_path),
                                        str(tmp_path / "cache")))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=TIMEOUT, env=python_env(BINDTHEM_PROGRESS="1", BINDTHEM_NO_PCH="1"))
    assert r.returncode == 0 and r.stdout == "4.0\n", r.stderr
    first = r.stderr.splitlines()[0]
    assert re.fullmatch(r"bindthem: compiling t\.h with slowcxx\.sh \.\.\. 1 s "
                        r"\([01] of 2 units done\)", first), r.stderr


# --- the example notebook ------------------------------------------------------------

def test_example_notebook_is_committed_without_outputs():
    with open(EXAMPLE, encoding="utf-8") as f:
        nb = json.load(f)
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_example_notebook_runs_clean(kernel_dir, tmp_path):
    import nbformat

    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    nb = nbformat.read(EXAMPLE, as_version=4)
    nbformat.validate(nb)
    notebook_client(nb, kernel_dir, tmp_path).execute()
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert errors(outs) == []
    text = stdout(outs)
    for label in ("float64: max |y - A @ x| = ", "float32: max |y - A @ x| = ",
                  "alpha = 2: max |y - 2 A @ x| = ", "bindthem.build: max |y - A @ x| = "):
        value = float(text.split(label, 1)[1].split()[0])
        assert value < (1e-4 if "float32" in label else 1e-12), (label, value)
    assert text.count(" per loop (mean ± std. dev. of 3 runs, 20 loops each)") == 2
    htmls = " ".join(results(outs, "text/html"))
    assert "<b>bindthem.Library</b> <code>spmv</code>" in htmls
    assert "csr_matvec&lt;int, double&gt;" in htmls and "csr_matvec&lt;int, float&gt;" in htmls
    assert "<code>csr_matvec(n_row, Ap, Aj, Ax, alpha, x, y)</code>" in htmls
    assert len(results(outs, "image/png")) == 1


# --- without a kernel --------------------------------------------------------------------

def test_getsource_refuses_a_changed_header(tmp_path):
    header = tmp_path / "g.h"
    header.write_text("// One.\nint one() { return 1; }\n")
    lib = bindthem.build(header, cache_dir=str(tmp_path / "cache"))
    assert bindthem.getsource(lib.one) == "// One.\nint one() { return 1; }\n"
    assert bindthem.getsource(lib) == header.read_text()
    header.write_text("\n\n// One.\nint one() { return 1; }\n")
    with pytest.raises(OSError, match=r"g\.h:2 no longer declares one"):
        bindthem.getsource(lib.one)
    with pytest.raises(TypeError, match="takes a bindthem Function, CUDA kernel or Library"):
        bindthem.getsource(len)


def test_display_of_a_function_whose_library_is_gone(tmp_path):
    import gc

    header = tmp_path / "h.h"
    header.write_text("// Two.\nint two() { return 2; }\n")
    lib = bindthem.build(header, cache_dir=str(tmp_path / "cache"))
    f = lib.two
    assert f.library is lib
    del lib
    gc.collect()
    assert f.library is None and f() == 2
    assert "<code>int two()</code>" in f._repr_html_()
    with pytest.raises(TypeError):
        bindthem.getsource(f)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        f._repr_pretty_(None)


def test_instantiate_yaml_groups_tuples_by_template_arity():
    pytest.importorskip("IPython")
    from bindthem.ipython import instantiate_yaml, split_types

    assert split_types("int, std::complex<double>") == ["int", "std::complex<double>"]
    assert split_types("std::map<int, int>,long") == ["std::map<int, int>", "long"]
    decls = [
        {"name": "k2", "template": ("I", "T"), "bindable": True, "static": False, "inline": False},
        {"name": "k1", "template": ("T",), "bindable": True, "static": False, "inline": False},
        {"name": "h1", "template": ("T",), "bindable": False, "static": False, "inline": False},
        {"name": "p", "template": (), "bindable": True, "static": False, "inline": False},
        {"name": "s", "template": (), "bindable": True, "static": True, "inline": False},
        {"name": "i", "template": (), "bindable": True, "static": False, "inline": True},
    ]
    text, where = instantiate_yaml(decls, ["int,double", "float", "long, float"])
    assert text == textwrap.dedent("""\
        # written by %%bindthem from its -t options
        - types:
            - ["float"]
          functions: [k1]
        - types:
            - ["int", "double"]
            - ["long", "float"]
          functions: [k2]
        - types: null
          functions: [p]
        """)
    assert where == {3: "float", 6: "int,double", 7: "long, float"}
