"""Call every overload a generated stub names, with the dtypes it names.

stubtest checks names and parameters, not dtypes: this runner reads each
``NAME.pyi`` with :mod:`ast` (not the metadata, so it checks what the stub
says), builds small arguments (length-1 zero arrays of the annotated dtype,
scalars 0), calls the runtime function and checks the returned type.

    python call_runtime.py SPEC.json

Prints one ``call MODULE.FUNC #K`` line before each call (so a crash names
its culprit) and ``FAIL ...`` lines; exits 1 if anything failed.
"""

import ast
import os
import sys

import numpy

from _libs import build_all, load_spec

SCALARS = {"int": (0, int), "float": (0.0, float), "complex": (0j, complex),
           "bool": (False, bool)}


def _value(ann):
    text = ast.unparse(ann)
    if text.startswith("numpy.typing.NDArray[numpy.") and text.endswith("]"):
        dtype = getattr(numpy, text[len("numpy.typing.NDArray[numpy."):-1])
        return numpy.zeros(1, dtype=dtype)
    return SCALARS[text][0]


def _check_return(ann, value):
    text = ast.unparse(ann)
    if text == "None":
        return value is None
    return type(value) is SCALARS[text][1]


def signatures(pyi):
    """{function: [(args ast, return ast), ...]} in stub order."""
    with open(pyi, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append((node.args.args, node.returns))
    return out


def _call(fn, values, returns):
    """Call fn(*values) in a forked child: (status, message). A kernel may
    crash on degenerate inputs; the child's death is reported, not ours."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            value = fn(*values)
            msg = "ok" if _check_return(returns, value) else "returned %r, stub says %s" % (
                value, ast.unparse(returns))
        except BaseException as e:  # noqa: BLE001 - reported
            msg = "%s: %s" % (type(e).__name__, e)
        os.write(w, msg.encode()[:60000])
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "crash", "killed by signal %d" % os.WTERMSIG(status)
    msg = b"".join(chunks).decode()
    return ("ok" if msg == "ok" else "fail"), msg


def main(spec_path):
    spec = load_spec(spec_path)
    libs = build_all(spec)
    failed = 0
    for name, lib in libs.items():
        sigs = signatures(os.path.join(spec["stubs"], name + ".pyi"))
        if sorted(sigs) != list(lib.__all__):
            print("FAIL %s: stub names %s, runtime %s" % (name, sorted(sigs), lib.__all__))
            failed += 1
        for fname, overloads in sigs.items():
            for k, (args, returns) in enumerate(overloads):
                values = [_value(a.annotation) for a in args]
                status, msg = _call(getattr(lib, fname), values, returns)
                print("%s %s.%s #%d %s" % (status, name, fname, k, msg))
    print("done, %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
