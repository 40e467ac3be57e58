"""Call every overload a generated stub names, with the dtypes it names.

stubtest checks names and parameters, not dtypes: this runner reads each
``NAME.pyi`` with :mod:`ast` (not the metadata, so it checks what the stub
says), builds small arguments of the annotated types (zero-filled arrays of
the annotated dtype, scalars 0), calls the runtime function and checks the
type of what it returns.

    python call_runtime.py SPEC.json

The calls run in forked children: pyamg's kernels index past degenerate
inputs or throw C++ exceptions (which abort the process) on some of them,
and that is the kernel's business, not the binding's. A child that dies is
retried with the next input scheme of SCHEMES; only an overload that dies
under every scheme is reported as ``crash``. A TypeError (the runtime
refusing the dtypes the stub names) fails at once.

Prints ``ok|fail|crash MODULE.FUNC #K message [scheme]`` per overload and
exits 1 if anything failed or crashed.
"""

import ast
import os
import sys

import numpy

from _libs import build_all, load_spec

# (array length, value of int scalars): lengths 1 and 2 with zeros make most
# loops run zero times; some kernels read a[n] with n = len - 1, others
# throw when a count is 0.
SCHEMES = ((1, 0), (2, 0), (0, 0), (2, 1))
SCALARS = {"int": (0, int), "float": (0.0, float), "complex": (0j, complex),
           "bool": (False, bool)}
ARRAY = "numpy.typing.NDArray[numpy."


def _value(ann, scheme):
    text = ast.unparse(ann)
    if text.startswith(ARRAY) and text.endswith("]"):
        return numpy.zeros(scheme[0], dtype=getattr(numpy, text[len(ARRAY):-1]))
    if text in ("int", "int | str"):  # a char takes an int or a 1-character str
        return scheme[1]
    return SCALARS[text][0]


def _check_return(ann, value):
    text = ast.unparse(ann)
    if text == "None":
        return value is None
    return type(value) is SCALARS[text][1]


def signatures(pyi):
    """{function: [(args, return annotation), ...]}, in stub order."""
    with open(pyi, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append((node.args.posonlyargs + node.args.args,
                                                 node.returns))
    return out


def _one(fn, overload, scheme):
    args, returns = overload
    try:
        value = fn(*[_value(a.annotation, scheme) for a in args])
    except BaseException as e:  # noqa: BLE001 - reported
        if "the kernel threw a C++ exception" in str(e):
            # the kernel refused these inputs (bindthem turned its C++
            # exception into a Python one): try the next input scheme
            return "reject %s: %s" % (type(e).__name__, e)
        return "fail %s: %s" % (type(e).__name__, e)
    if _check_return(returns, value):
        return "ok"
    return "fail returned %r, stub says %s" % (value, ast.unparse(returns))


def _forked(fn, jobs):
    """Run [(overload, scheme)] in one child: their results, or fewer (the
    results before the one it died on) and the signal that killed it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        for overload, scheme in jobs:
            os.write(w, (_one(fn, overload, scheme).replace("\n", " ")[:4000] + "\n").encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        results = f.read().decode().splitlines()
    _, status = os.waitpid(pid, 0)
    return results, os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


def run_function(fn, overloads):
    """[(status, message)] per overload, one child for all when none crashes
    or is refused; the others are retried one by one with the other input
    schemes."""
    results, sig = _forked(fn, [(ov, SCHEMES[0]) for ov in overloads])
    out = []
    for i, ov in enumerate(overloads):
        if i < len(results) and not results[i].startswith("reject"):
            out.append((results[i].split(" ", 1)[0], results[i], SCHEMES[0]))
            continue
        last = None
        for scheme in SCHEMES:
            res, sig = _forked(fn, [(ov, scheme)])
            if res and not res[0].startswith("reject"):
                out.append((res[0].split(" ", 1)[0], res[0], scheme))
                break
            last = res[0] if res else "killed by signal %d" % sig
        else:
            out.append(("crash" if last.startswith("killed") else "fail",
                        "%s under every input scheme" % last, None))
    return out


def main(spec_path):
    spec = load_spec(spec_path)
    libs = build_all(spec)
    bad = 0
    for name, lib in libs.items():
        sigs = signatures(os.path.join(spec["stubs"], name + ".pyi"))
        if sorted(sigs) != list(lib.__all__):
            print("fail %s: the stub names %s, the runtime %s" % (name, sorted(sigs), lib.__all__))
            bad += 1
        for fname, overloads in sigs.items():
            for k, (status, msg, scheme) in enumerate(run_function(getattr(lib, fname),
                                                                   overloads)):
                bad += status != "ok"
                print("%s %s.%s #%d %s %s" % (status, name, fname, k, msg, scheme), flush=True)
    print("done, %d bad" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
