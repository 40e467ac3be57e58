"""bindthem.stubs: a ``.pyi`` for a header's kernels, from the same metadata.

Like stubgen-pyx, the stub comes from the source (the kernel header and
instantiate.yml, read by the C core through :func:`bindthem.parse_header`),
never from introspecting a compiled module, so it carries the exact NumPy
dtypes and the header's docstrings::

    python -m bindthem.stubs HEADER [-i instantiate.yml] [--module NAME]
                                    [-o FILE.pyi | -o DIR] [--check]
                                    [--cpp auto|always|never] [--cppflags FLAGS]

Without ``-o`` the stub goes to standard output. ``-o DIR`` (an existing
directory, or a path ending in ``/``) writes ``DIR/NAME.pyi`` (a dotted NAME
becomes sub-directories). ``--check`` writes nothing: it regenerates the stub
in memory and compares it with the file ``-o`` names; exit status 0 when it is
fresh, 1 when it is stale or missing (a unified diff is printed), 2 on error.
A header that binds nothing exits 1 whatever the options, with the reasons on
standard error, and writes nothing.

What a stub holds: the Library's module docstring, ``from typing import
overload``, the NumPy imports, a sorted ``__all__``, and per function one
``@overload`` per instantiation in YAML order (a plain ``def`` when only one
is left). Parameters are the header's, minus the size ones (``x_size``,
``x_sizeK``); arrays are ``numpy.typing.NDArray[numpy.<dtype>]``, scalars
``int`` / ``float`` / ``complex`` / ``bool``, a ``void`` return is ``None``; a ``const char *``
parameter (a string) is ``str | bytes``, a returned one ``str | None``; a handle
(``gzFile``, ``FILE *``) is ``bindthem.Handle``, a ``void *`` parameter
``bindthem.Handle | None`` (the stub then imports bindthem); a function pointer
parameter is the ``Callable`` a Python callable for it must be (for ``double
(*)(double, void *)``, ``Callable[[float, int | None], float]``; ``object`` for a
``void`` result, which is ignored), or ``Callable[..., R]`` where only a C function
pointer can stand for it (ctypes', cffi's and numba's function pointers are callable
too; a plain int is not taken); a struct by pointer is ``numpy.typing.NDArray[numpy.void]``
(``| numpy.void`` when const), by value ``numpy.void | numpy.typing.NDArray[numpy.void]``,
a returned one ``numpy.void``; a fixed-size C array (``uuid_t uu``, ``double m[3][3]``)
is ``numpy.ndarray[tuple[int], numpy.dtype[numpy.uint8]]``, its rank (the exact shape,
which the call checks, follows the ``def`` as a comment: ``# shape: uu (16,)``;
Python's ``__text_signature__`` takes no annotations). Overloads whose Python parameters come out
identical (template parameters the signature does not use) are merged, the
first in YAML order kept: it is also the one the runtime dispatches to. The
header comment is the docstring of the last overload. The output is
byte-identical across runs and machines. A bound Function's
``inspect.signature`` shows the same types (bindthem._services.signature
spells them for both), each parameter's joined over the overloads.

A header with ``#define`` constants, enums or structs (an ordinary C header, read
through the C preprocessor as :func:`bindthem.load` reads it: ``--cpp``,
``--cppflags``) gets what the Library has besides its kernels, before them:
each enum class as ``class NAME(enum.IntEnum)`` (``enum.IntFlag`` for a
flags enum) with its members, each constant as ``NAME: Final[int]`` (or
``Final[str]``), each member of the header's own enums as ``NAME:
Final[ENUM]``, and each struct's dtype as ``NAME: numpy.dtype[numpy.void]``
(named.named_attributes). A header without them gets none of these lines, nor their
imports.
"""

import argparse
import difflib
import keyword
import os
import sys

from ._base.files import write_text
from ._base.instantiation import split_types
from ._services import preprocess
from ._services.binding import _module_doc, plan_message
from ._services.compile import ondemand
from ._services.named import named_attributes
from ._services.signature import annotated
from .errors import BindError, BindWarning, warn

__all__ = ["CPP_CHOICES", "cpp_arguments", "metadata_of", "render", "render_metadata", "main"]

_MAX_LINE = 99
_INDENT = "    "


def _signature(ov):
    """The Python parameters as "name: annotation" strings, and the return
    (bindthem._services.signature.annotated: the types a Function's
    ``__signature__`` shows too). A parameter with a default (the metadata's
    ``default``: the value a call that leaves it out passes) is written with
    that value (``omega: float = 1.0``, ``trans: int | str = 'T'``), or
    ``= ...`` for a complex one."""
    triples, returns = annotated(ov)
    params = ["%s: %s%s" % (name, ann, _default(value, ann)) for name, ann, value in triples]
    if ov["positional_only"]:
        params.insert(ov["positional_only"], "/")
    return tuple(params), returns


def _shapes(ov):
    """A comment saying the exact shape of each fixed-size array parameter
    the call takes (the metadata's ``shape``: ``# shape: out (16,)``), or ""."""
    shaped = ["%s %r" % (p["python_name"], tuple(p["shape"])) for p in ov["params"]
              if p.get("shape") and p["python_name"] is not None]
    return "  # shape: " + ", ".join(shaped) if shaped else ""


def _default(value, annotation):
    if value is None:
        return ""
    if type(value).__name__ in annotation.split(" | ") and not isinstance(value, complex):
        return " = %r" % (value,)
    return " = ..."


def _def_line(name, params, returns, body):
    one = "def %s(%s) -> %s:%s" % (name, ", ".join(params), returns, body)
    if len(one) <= _MAX_LINE:
        return [one]
    lines = ["def %s(" % name]
    lines += [_INDENT + a + "," for a in params]
    lines.append(") -> %s:%s" % (returns, body))
    return lines


def _docstring(doc, indent):
    text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    lines = text.split("\n")
    out = [indent + '"""' + lines[0]]
    out += [(indent + line) if line.strip() else "" for line in lines[1:]]
    if len(lines) > 1:
        out.append(indent + '"""')
    else:
        out[0] += '"""'
    return out


def _function(fn):
    sigs = []
    for ov in fn["overloads"]:
        params, returns = _signature(ov)
        # identical Python parameters: the runtime dispatches to the first
        if all(p != params for p, _, _ in sigs):
            sigs.append((params, returns, _shapes(ov)))
    doc = fn["doc"].strip("\n")
    lines = []
    for k, (params, returns, shapes) in enumerate(sigs):
        last = k == len(sigs) - 1
        if len(sigs) > 1:
            lines.append("@overload")
        if last and doc:
            lines += _def_line(fn["name"], params, returns, shapes)
            lines += _docstring(doc, _INDENT)
        else:
            lines += _def_line(fn["name"], params, returns, " ..." + shapes)
    return lines


def kernel_names(meta):
    """The names of the kernels a Library bound from ``meta`` (parse_header's)
    has: the stub's ``__all__``, and a module's bound on first use."""
    return sorted(fn["name"] for fn in meta["functions"])


def _value(v):
    return repr(v) if isinstance(v, str) else str(int(v))


def _named(meta, names):
    """The lines of what the Library has besides its kernels (the header's
    enum classes, constants, enum members and struct dtypes:
    named.named_attributes), and whether they use ``enum`` and ``Final``."""
    classes, values, dtypes = [], [], []
    named = named_attributes(meta, names)
    with_class = {name for name, what, _ in named if what == "enum"}
    for name, what, item in named:
        if what == "enum":
            base = "enum.IntFlag" if item["flags"] else "enum.IntEnum"
            body = [_INDENT + "%s = %s" % (n, _value(v)) for n, v in item["members"]
                    if n.isidentifier() and not keyword.iskeyword(n)
                    and not (n.startswith("_") and n.endswith("_"))]
            classes += ["", "", "class %s(%s):" % (name, base)] + (body or [_INDENT + "..."])
        elif what == "constant":
            kind = "str" if isinstance(item["value"], str) else "int"
            values.append("%s: Final[%s]" % (name, kind))
        elif what == "struct":
            dtypes.append("%s: numpy.dtype[numpy.void]" % name)
        else:  # a member: of its class when the Library has it under its name
            cls = item[0]["name"]
            values.append("%s: Final[%s]" % (name, cls if cls in with_class else "int"))
    lines = classes + (["", ""] + values if values else []) + (["", ""] + dtypes if dtypes else [])
    return lines, bool(classes), bool(values)


def _uses_handles(functions):
    """Whether a signature names bindthem.Handle (the stub imports bindthem)."""
    return any(x.get("handle") or x.get("voidp") for fn in functions for ov in fn["overloads"]
               for x in (ov["return"], *ov["params"]))


def _uses_callbacks(functions):
    """Whether a signature has a function pointer parameter (``Callable[...]``)."""
    return any(p.get("callback") for fn in functions for ov in fn["overloads"]
               for p in ov["params"])


def _render_meta(meta):
    functions = meta["functions"]
    names = kernel_names(meta)
    doc = _module_doc(None, meta["header"], names).rstrip("\n")
    lines = _docstring(doc, "")
    named, uses_enum, uses_final = _named(meta, names)
    lines += ["", "%s%sfrom typing import %soverload" % (
        "import enum\n" if uses_enum else "",
        "from collections.abc import Callable\n" if _uses_callbacks(functions) else "",
        "Final, " if uses_final else ""),
              "", *(["import bindthem"] if _uses_handles(functions) else []), "import numpy",
              "import numpy.typing", ""]
    one = "__all__ = [%s]" % ", ".join('"%s"' % n for n in names)
    if not names:
        lines.append("__all__: list[str] = []")
    elif len(one) <= _MAX_LINE:
        lines.append(one)
    else:
        lines.append("__all__ = [")
        lines += [_INDENT + '"%s",' % n for n in names]
        lines.append("]")
    lines += named
    for fn in functions:
        lines += ["", ""]
        lines += _function(fn)
    return "\n".join(lines) + "\n"


def render_metadata(meta, module=None):
    """The ``.pyi`` text of a Plan's metadata (``plan.metadata()``), warning
    as :func:`render` does."""
    _check_module(module)
    why = plan_message(meta)
    if why:
        warn(why, BindWarning)
    return _render_meta(meta)


def _check_module(module):
    if module is None:
        return
    if not isinstance(module, str) or not all(
            part.isidentifier() and not keyword.iskeyword(part) for part in module.split(".")):
        raise ValueError("not a module name: %r" % (module,))


def metadata_of(header, instantiate=None, strict=False, cpp="auto", cppflags=None):
    """The metadata of the Plan load() binds for these arguments (cpp, cppflags: its)."""
    plan, _ = preprocess.plan_of(os.path.abspath(os.fspath(header)),
                                 os.fspath(instantiate) if instantiate is not None else None,
                                 strict, cpp, cppflags)
    return plan.metadata()


def render(header, instantiate=None, module=None, *, strict=False, cpp="auto", cppflags=None):
    """The ``.pyi`` text for the kernels ``header`` (and ``instantiate``)
    bind, as :func:`bindthem.load` / :func:`bindthem.build` bind them
    (``cpp``, ``cppflags``: load's: the header read through the C
    preprocessor or as written).

    ``module`` is the name the stub is for (default: the header's stem); it
    is checked but does not change the text, which depends only on the
    header's and the YAML's contents and the header's file name. A header
    whose templated functions get no instantiate.yml, so that nothing is
    bound, warns (:class:`bindthem.BindWarning`) and says what to pass.
    """
    _check_module(module)
    return render_metadata(metadata_of(header, instantiate, strict, cpp, cppflags))


def _target(output, module):
    if output.endswith(os.sep) or (os.sep != "/" and output.endswith("/")) or os.path.isdir(output):
        return os.path.join(output, *module.split(".")) + ".pyi"
    return output


def _check(path, text, out):
    try:
        with open(path, "rb") as f:
            old = f.read().decode("utf-8")
    except FileNotFoundError:
        old = None
    if old == text:
        return 0
    if old is None:
        out.write("%s does not exist\n" % path)
        old_lines, fromfile = [], "/dev/null"
    else:
        old_lines, fromfile = old.splitlines(keepends=True), path
        out.write("%s is stale\n" % path)
    out.writelines(difflib.unified_diff(old_lines, text.splitlines(keepends=True),
                                        fromfile=fromfile, tofile="%s (generated)" % path))
    return 1


def _on_demand_argument(text):
    """--on-demand "axpy:int,double" -> ("axpy", ("int", "double"))."""
    name, sep, types = text.partition(":")
    if not sep or not name.strip().isidentifier():
        raise ValueError("--on-demand %r: expected FUNCTION:TYPES, e.g. axpy:int,double" % text)
    return name.strip(), tuple(split_types(types))


# --cpp on the command line: load()'s cpp=
CPP_CHOICES = {"auto": "auto", "always": True, "never": False}


def cpp_arguments(parser):
    """--cpp and --cppflags, as the stubs and ``python -m bindthem show`` take them."""
    parser.add_argument("--cpp", choices=tuple(CPP_CHOICES), default="auto",
                        help="read the header through the C preprocessor: auto (when as "
                        "written it leaves declarations out; the default), always, never")
    parser.add_argument("--cppflags", metavar="FLAGS",
                        help='the preprocessor\'s flags (-D, -I, -U, -std, -include), e.g. '
                        '--cppflags="-DNDEBUG -I include"')


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bindthem.stubs",
        description="Write a .pyi stub for a header's kernels from the header and instantiate.yml.")
    p.add_argument("header")
    p.add_argument("-i", "--instantiate", help="the instantiate.yml")
    p.add_argument("--module", help="module name of the stub (default: the header's stem)")
    p.add_argument("-o", "--output",
                   help="FILE.pyi, or a DIR to write DIR/NAME.pyi in (default: standard output)")
    p.add_argument("--check", action="store_true",
                   help="compare with the -o file instead of writing: exit 0 if fresh, "
                        "1 if stale (prints a diff), 2 on error")
    p.add_argument("--strict", action="store_true",
                   help="a YAML function the header lacks is an error")
    cpp_arguments(p)
    p.add_argument("--on-demand", action="append", default=[], metavar="FUNC:TYPES",
                   help='an instantiation made on demand to list too ("axpy:int,double"); '
                        "repeatable")
    p.add_argument("--on-demand-seen", action="store_true",
                   help="list too the instantiations calls made on demand (in any process "
                        "using this build cache, $BINDTHEM_CACHE)")
    args = p.parse_args(argv)
    try:
        if args.check and not args.output:
            raise ValueError("--check needs -o, the stub to compare with")
        _check_module(args.module)
        meta = metadata_of(args.header, args.instantiate, args.strict, CPP_CHOICES[args.cpp],
                         args.cppflags)
        made = [_on_demand_argument(a) for a in args.on_demand]
        if args.on_demand_seen:
            made += ondemand.seen(args.header)
        meta = ondemand.with_instantiations(meta, args.header, made, args.strict)
        why = plan_message(meta) if not made else None
        if not meta["functions"]:  # a stub of nothing: say why, and write none
            print("error: %s" % why, file=sys.stderr)
            return 1
        if why:
            print("warning: %s" % why, file=sys.stderr)
        text = _render_meta(meta)
        if args.output is None:
            sys.stdout.write(text)
            return 0
        module = args.module or os.path.splitext(os.path.basename(args.header))[0]
        path = _target(args.output, module)
        if args.check:
            return _check(path, text, sys.stdout)
        write_text(path, text)
        return 0
    except (BindError, OSError, ValueError, UnicodeDecodeError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
