"""Command line: ``python -m bindthem show|build ...``."""

import argparse
import keyword
import sys

from . import parse_header
from .build import compile_library
from .errors import BindError


def _first_line(doc):
    for line in doc.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _python_signatures(fn):
    """How fn is called: "f(x, out)", its parameters as the runtime takes
    them (size parameters dropped, a keyword name with a trailing
    underscore); distinct ones joined with " or "."""
    sigs = []
    for ov in fn["overloads"]:
        names = [p["name"] + "_" if keyword.iskeyword(p["name"]) else p["name"]
                 for p in ov["params"] if p["size_of"] is None]
        sig = "%s(%s)" % (fn["name"], ", ".join(names))
        if sig not in sigs:
            sigs.append(sig)
    return " or ".join(sigs)


def show(args):
    meta = parse_header(args.header, args.instantiate, strict=args.strict)
    out = sys.stdout
    for fn in meta["functions"]:
        n = len(fn["overloads"])
        out.write("%s  (%d overload%s)\n" % (_python_signatures(fn), n, "" if n == 1 else "s"))
        first = _first_line(fn["doc"])
        if first:
            out.write("    %s\n" % first)
        for ov in fn["overloads"]:
            out.write("    %s\n" % ov["signature"])
        out.write("\n")
    if meta["skipped"]:
        out.write("unbound functions:\n")
        for s in meta["skipped"]:
            out.write("    %s (line %d): %s\n" % (s["name"], s["line"], s["reason"]))
    if meta["missing"]:
        out.write("listed in %s but not in this header: %s\n"
                  % (meta["instantiate"], ", ".join(meta["missing"])))
    return 0


def build(args):
    path = compile_library(args.header, args.instantiate, output=args.output,
                           cxx=args.cxx, cxxflags=args.cxxflags, strict=args.strict)
    print(path)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bindthem",
                                description="Bind C/C++ kernels from a header at run time.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("show", help="print the functions a header and instantiate.yml bind")
    s.add_argument("header")
    s.add_argument("-i", "--instantiate")
    s.add_argument("--strict", action="store_true",
                   help="a YAML function the header lacks is an error")
    s.set_defaults(run=show)
    b = sub.add_parser("build", help="compile the header's kernels into a shared library")
    b.add_argument("header")
    b.add_argument("-i", "--instantiate")
    b.add_argument("-o", "--output", help="where to write the library (default: the cache)")
    b.add_argument("--cxx")
    b.add_argument("--cxxflags")
    b.add_argument("--strict", action="store_true")
    b.set_defaults(run=build)
    args = p.parse_args(argv)
    try:
        return args.run(args)
    except (BindError, OSError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
