"""The file graph of csrc/: which .c file calls (or reads data of) which.

An edge a -> b means a.o refers to a symbol that b.o defines (from `nm` of
the compiled objects). csrc's files must form layers: the graph has no
cycle. Usage:

    python tests/core/c/include_graph.py [OBJDIR]     # prints the graph, exits 1 on a cycle

OBJDIR holds one .o per csrc source, in its layer's folder as setuptools
lays them out (default: the in-place build's build/temp*/csrc); objects older
than their source are refused, so a stale build cannot hide a cycle.
"""

import glob
import os
import shlex
import subprocess
import sys
import sysconfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers  # noqa: E402

ROOT = layers.ROOT
CSRC = layers.CSRC


def sources():
    """The csrc files that become objects (stem -> path)."""
    return layers.sources()


def object_path(objdir, src):
    """Where src's object lies under objdir: csrc/<layer>/x.c -> objdir/<layer>/x.o."""
    stem = os.path.splitext(os.path.basename(src))[0]
    return os.path.join(objdir, layers.layer_of(src), stem + ".o")


def default_objdir():
    dirs = sorted(glob.glob(os.path.join(ROOT, "build", "temp*", "csrc")), key=os.path.getmtime)
    return dirs[-1] if dirs else None


def compile_objects(outdir, cc=None):
    """Compiles every csrc source into outdir (-O0: only the symbols matter)."""
    import numpy

    cc = cc or os.environ.get("CC", "gcc")
    flags = ["-c", "-O0"] + ["-I" + d for d in layers.include_dirs()] + [
             "-I" + numpy.get_include(),
             "-I" + sysconfig.get_paths()["include"]]
    for pkg in ("libffi", "yaml-0.1"):
        r = subprocess.run(["pkg-config", "--cflags", pkg], capture_output=True, text=True)
        if r.returncode == 0:
            flags += shlex.split(r.stdout)
    procs = []
    for stem, src in sorted(sources().items()):
        std = "-std=c++11" if src.endswith(".cpp") else "-std=c11"
        obj = object_path(outdir, src)
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        cmd = [cc if std == "-std=c11" else "g++", std] + flags + [src, "-o", obj]
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True)))
    for cmd, p in procs:
        out, _ = p.communicate()
        if p.returncode:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), out))


def symbols(obj):
    """(defined, undefined) external symbol names of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():  # global: T, D, B, R, ...
            defined.add(name)
    return defined, undefined


def graph(objdir):
    """{stem: set of stems it depends on}. ValueError for a missing or stale object."""
    srcs = sources()
    defs, uses = {}, {}
    for stem, src in srcs.items():
        obj = object_path(objdir, src)
        if not os.path.exists(obj):
            raise ValueError("no object %s for %s (build first)" % (obj, src))
        if os.path.getmtime(obj) < os.path.getmtime(src):
            raise ValueError("%s is older than %s (rebuild first)" % (obj, src))
        defs[stem], uses[stem] = symbols(obj)
    owner = {}
    for stem, names in defs.items():
        for n in names:
            owner[n] = stem
    return {stem: {owner[n] for n in used if n in owner and owner[n] != stem}
            for stem, used in uses.items()}


def find_cycle(g):
    """One cycle as a list of stems (first == last), or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(g[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main(argv):
    objdir = argv[1] if len(argv) > 1 else default_objdir()
    if not objdir:
        print("no build/temp*/csrc: build in place first", file=sys.stderr)
        return 2
    try:
        g = graph(objdir)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    for n in sorted(g):
        print("%s -> %s" % (n, " ".join(sorted(g[n])) or "-"))
    c = find_cycle(g)
    if c:
        print("cycle: " + " -> ".join(c), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
