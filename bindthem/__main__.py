"""Command line: ``python -m bindthem show|build|package|cache ...``."""

import argparse
import os
import sys
import time
import warnings

from . import parse_header
from ._services.binding import plan_message
from ._services.cache import cache_limit, entries, remove_entry, resolve, sweep
from ._services.compile.units import JOBS_HELP, jobs_argument
from ._services.display import named_lines
from ._services.named import named_enums
from .errors import BindError
from .library import compile_library
from .package import package_built_library, package_flags, package_sources
from .stubs import CPP_CHOICES, cpp_arguments, metadata_of


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
        names = [p["python_name"] for p in ov["params"] if p["python_name"] is not None]
        sig = "%s(%s)" % (fn["name"], ", ".join(names))
        if sig not in sigs:
            sigs.append(sig)
    return " or ".join(sigs)


def show(args):
    meta = metadata_of(args.header, args.instantiate, args.strict, CPP_CHOICES[args.cpp],
                       args.cppflags)
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
    named = named_lines(meta, classes={e["name"] for e in named_enums(meta)})
    if named:
        out.write("\n".join(named) + "\n")
    return 0


def build(args):
    meta = parse_header(args.header, args.instantiate, strict=args.strict)
    if not meta["functions"]:  # nothing to compile: say why, and build nothing
        print("error: %s" % plan_message(meta), file=sys.stderr)
        return 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = compile_library(args.header, args.instantiate, output=args.output, cxx=args.cxx,
                               cxxflags=args.cxxflags, extra_cxxflags=args.extra_cxxflags,
                               openmp=args.openmp, cache_dir=args.cache_dir, strict=args.strict,
                               jobs=args.jobs)
    for w in caught:
        print("warning: %s" % w.message, file=sys.stderr)
    print(path)
    return 0


def package(args):
    module = args.module or "%s.%s" % (args.package, os.path.splitext(
        os.path.basename(args.header))[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flags = package_flags(args.header, args.instantiate, cxxflags=args.cxxflags,
                              extra_cxxflags=args.extra_cxxflags, openmp=args.openmp,
                              strict=args.strict)
    if args.action == "flags":
        for w in caught:
            print("warning: %s" % w.message, file=sys.stderr)
        print("\n".join(flags))
        return 0
    if not args.output:
        print("error: package %s writes files: give the folder with -o/--output" % args.action,
              file=sys.stderr)
        return 2
    if args.action == "sources":
        package_sources(args.output, args.header, args.instantiate, module=module,
                        strict=args.strict, lazy=args.lazy, package=args.package)
        return 0
    if not args.built:
        print("error: package library copies the library the build system linked: give it "
              "with --built", file=sys.stderr)
        return 2
    package_built_library(args.output, args.built, args.header, args.instantiate,
                          module=module, flags=flags, strict=args.strict)
    return 0


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024


def cache(args):
    root = resolve(args.cache_dir)  # the cache builds use: a distrusted one is not touched
    es = entries(root)
    left = [e for e in es if e["kind"] == "removed" or e["leftovers"]]
    if args.action == "size":
        limit = cache_limit()
        print("%s in %d entries (%s; bound %s)%s" % (
            _size(sum(e["size"] for e in es)), len(es), root,
            "none" if limit is None else _size(limit),
            "; %d hold what killed processes left (removed by the next build or cache clear)"
            % len(left) if left else ""))
        return 0
    if args.action == "list":
        for e in reversed(es):  # most recently used first
            print("%s  %9s  %-9s  %s%s" % (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(e["used"])), _size(e["size"]),
                e["kind"], e["file"] or e["path"],
                "  (+%d temporary files of killed builds)" % len(e["leftovers"])
                if e["leftovers"] else ""))
        return 0
    cutoff = None if args.older_than is None else time.time() - args.older_than * 86400
    removed = freed = 0
    sweep(root)  # what killed processes left, whatever its age
    for e in entries(root):
        if cutoff is not None and e["used"] >= cutoff:
            continue
        if remove_entry(e["path"]):
            removed += 1
            freed += e["size"]
    print("removed %d entries (%s) from %s" % (removed, _size(freed), root))
    return 0


def _days(text):
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of days, e.g. 30 or 0.5") from None
    if days < 0:
        raise argparse.ArgumentTypeError("expected a number of days >= 0")
    return days


def _header_arguments(parser):
    """The header and its instantiate.yml, as show and build take them."""
    parser.add_argument("header", help="the kernel header")
    parser.add_argument("-i", "--instantiate", metavar="YML",
                        help="instantiate.yml: the type tuples of the templated functions")


def _strict_argument(parser):
    parser.add_argument("--strict", action="store_true",
                        help="a YAML function the header lacks is an error")


def _flag_arguments(parser):
    parser.add_argument("--cxxflags", metavar="FLAGS",
                        help='flags that REPLACE the default -O3, e.g. --cxxflags="-O2 -g"')
    parser.add_argument("--extra-cxxflags", metavar="FLAGS",
                        help='flags APPENDED after -O3 (or --cxxflags) and $CXXFLAGS, e.g. '
                        '--extra-cxxflags="-march=native"')
    parser.add_argument("--openmp", action="store_true",
                        help="append -fopenmp (compile and link)")


def _jobs_argument(parser):
    parser.add_argument("-j", "--jobs", type=jobs_argument, metavar="N", help=JOBS_HELP)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bindthem",
                                description="Bind C/C++ kernels from a header at run time.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("show", help="print the functions a header and instantiate.yml bind",
                       description="Print each function a header binds: its Python call, "
                       "overloads as C signatures, the doc's first line, the header's "
                       "unbound functions with the reason, then its constants and enums (the "
                       "Library's attributes besides its kernels).")
    _header_arguments(s)
    _strict_argument(s)
    cpp_arguments(s)
    s.set_defaults(run=show)
    b = sub.add_parser(
        "build", help="compile the header's kernels into a shared library",
        description="Compile the header's functions and the instantiations instantiate.yml "
        "lists into a shared library (through bindthem's cache) and print its path. Flags, "
        "in order: --cxxflags (default -O3; replaces it), then appended: $CXXFLAGS, "
        "--extra-cxxflags, -fopenmp for --openmp; -fPIC -shared last. Exit status: 0 built, "
        "1 nothing to bind (the reasons on standard error), 2 an error.")
    _header_arguments(b)
    b.add_argument("-o", "--output", help="where to write the library (default: the cache)")
    b.add_argument("--cxx", help="the C++ compiler (default: $CXX or c++)")
    _flag_arguments(b)
    b.add_argument("--cache-dir", metavar="DIR",
                   help="the build cache (default: $BINDTHEM_CACHE or ~/.cache/bindthem)")
    _jobs_argument(b)
    _strict_argument(b)
    b.set_defaults(run=build)
    k = sub.add_parser(
        "package", help="the steps of a build system (meson) that ships kernels in a package",
        description="For a package built by a build system that compiles the kernel library "
        "itself (meson-python's shared_library(); docs/packages.rst): flags "
        "prints the flags to compile and link with, one a line (bindthem.build's, before "
        "-fPIC -shared), and warns as a build would; sources writes <stem>.bindthem.cpp (the "
        "header and its explicit instantiations) and the stub <stem>.pyi into --output; "
        "library copies the linked library (--built) into --output as lib<stem>.so and "
        "writes the manifest <stem>.bindthem.json that bindthem.load_package checks. Give "
        "each step the same header, YAML and options.")
    k.add_argument("action", choices=("flags", "sources", "library"),
                   help="flags: print the compile and link flags; sources: write the "
                   "instantiation source and the stub; library: place the linked library and "
                   "write its manifest")
    _header_arguments(k)
    k.add_argument("--package", required=True, metavar="NAME",
                   help="the package the header ships in (its __name__)")
    k.add_argument("--module", metavar="NAME",
                   help="the module the stub describes (default: <package>.<header stem>, the "
                   "name load_package gives the Library)")
    k.add_argument("-o", "--output", metavar="DIR", help="sources, library: the folder to write")
    k.add_argument("--built", metavar="LIB", help="library: the shared library the build linked")
    k.add_argument("--lazy", action="store_true",
                   help="sources: also write the module itself, <stem>.py, which binds on first "
                   "use (install it with the package's Python sources)")
    _flag_arguments(k)
    _strict_argument(k)
    k.set_defaults(run=package)
    c = sub.add_parser(
        "cache", help="list, measure or clear the build cache",
        description="bindthem.build's cache: $BINDTHEM_CACHE or ~/.cache/bindthem. After each "
        "compile, least recently used entries are removed until it holds at most "
        "$BINDTHEM_CACHE_SIZE (default 1G; 0 or none: unbounded).")
    c.add_argument("action", choices=("list", "size", "clear"),
                   help="list: entries, most recently used first (last use, size, kind, "
                   "library; kind removed: a folder a killed process was removing); size: the "
                   "total, leftovers of killed processes included; clear: remove entries and "
                   "those leftovers")
    c.add_argument("--older-than", type=_days, metavar="DAYS",
                   help="clear: only entries last used more than DAYS days ago")
    c.add_argument("--cache-dir", metavar="DIR",
                   help="the cache (default: $BINDTHEM_CACHE or ~/.cache/bindthem)")
    c.set_defaults(run=cache)
    args = p.parse_args(argv)
    if args.command == "cache" and args.older_than is not None and args.action != "clear":
        p.error("--older-than goes with clear")
    try:
        return args.run(args)
    except (BindError, OSError, ValueError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
