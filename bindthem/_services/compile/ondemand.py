"""Instantiation on demand: a templated kernel called with types no overload takes.

:func:`bindthem.build` without instantiate.yml (or with ``on_demand=True``)
binds each templated function of the header as an *open* Function
(``_core.open_function``). A call that no overload takes reaches
:func:`call` (through ``bindthem._from_c.on_demand``), which deduces the
template arguments from the call, compiles that one instantiation in its own
translation unit through the build cache, binds it and adds it to the
Function (``Function._add``), then makes the call again: later calls with
those types take the normal dispatch. docs/on-demand.rst, "Instantiation on
demand", states the rules.

Part of the build: the build (``kernels``) opens the functions
(:func:`open_functions`), and this module compiles each instantiation
(:func:`compile_one`) from the build's translation unit (``source``), its
units' command (``units``) and its compiler (``compiler``), through the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import keyword
import os
import tempfile
import threading
import weakref

import numpy as np

from ... import _core
from ..._base.instantiation import OPEN_MAX, yaml_lines
from ...errors import BindError, BuildError
from .. import carry
from ..binding import _make, own
from ..cache import compile_cached, group_read, group_write, shell_words
from .compiler import _compiler_id, _system_dirs
from .source import PRELUDE, snapshot_flags, snapshot_name, write_snapshot
from .units import _unit_command

__all__ = ["Context", "call", "compile_one", "deduce", "made_overloads", "open_functions",
           "open_library", "seen",
           "set_cell", "with_instantiations"]

# the C type a call's array dtype deduces: one per dtype (int64 -> long, as int does)
_DTYPE_C: dict[str, str] = {}
for _t in _core.scalar_types():
    if _t["numpy"] not in ("None",) and _t["c"] not in ("char", "long long",
                                                         "unsigned long long"):
        _DTYPE_C.setdefault(_t["numpy"], _t["c"])
        try:  # and by NumPy's dtype.name: longdouble's is "float128" on x86-64
            _DTYPE_C.setdefault(np.dtype(_t["numpy"]).name, _t["c"])
        except TypeError:  # bfloat16: ml_dtypes' type, which NumPy knows only by its object
            pass


def _scalar_c(value):
    """The C type a scalar argument deduces, or None: Python float -> double,
    int -> long, complex -> std::complex<double>, bool -> bool, a NumPy
    scalar by its dtype."""
    if isinstance(value, np.generic):
        return _DTYPE_C.get(value.dtype.name)
    for kind, c in ((bool, "bool"), (int, "long"), (float, "double"),
                    (complex, "std::complex<double>")):
        if isinstance(value, kind):
            return c
    return None


class Context:
    """What an on-demand instantiation of one Library is built with: the
    build's header path and the exact bytes it built (``header_text``, its
    Plan's), compiler, flags, options and cache (:func:`compile_one` compiles
    with them)."""

    __slots__ = ("header", "header_text", "name", "cxx", "flags", "cache_dir", "strict",
                 "options", "source", "cell", "__weakref__")

    def __init__(self, header, header_text, name, cxx, flags, cache_dir, strict, options,
                 source):
        self.header, self.header_text, self.name = header, header_text, name
        self.cxx, self.flags, self.cache_dir = cxx, list(flags), cache_dir
        self.strict, self.options, self.source = strict, options, source
        self.cell = None  # %%bindthem: what its errors call the header ("cell")


def set_cell(lib, name):
    """Errors of lib's instantiations on demand call its header ``name``
    (the notebook's ``cell:LINE:COL``)."""
    with _registry_lock:
        ctxs = {id(op.ctx): op.ctx for fn, op in _opens.items() if fn.library is lib}
    for ctx in ctxs.values():
        ctx.cell = name


class _Open:
    """One open Function's template: its declaration and what was made."""

    __slots__ = ("ctx", "decl", "names", "made", "lock")

    def __init__(self, ctx, decl, names):
        self.ctx, self.decl, self.names = ctx, decl, names
        self.made = {}  # types -> the overload's metadata; insertion order is the order made
        self.lock = threading.Lock()  # one instantiation added at a time


_opens: "weakref.WeakKeyDictionary[object, _Open]" = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()
_key_locks: dict = {}  # (id(_Open), types) -> Lock: concurrent first calls compile once
# (header text hash, flags, name, types) -> BuildError text and output: an
# instantiation the compiler rejected is not compiled again in this process (a
# transient failure, BuildError.transient, is not remembered: an OOM kill says
# nothing about the source)
_failed: dict = {}


def _python_params(decl):
    """The declaration's Python parameters: every parameter but the size ones."""
    return [p for p in decl["params"] if not p["size_of"]]


def open_library(lib, header, plan, name, cxx, flags, cache_dir, strict, options, source):
    """Opens ``lib``, bound from ``plan`` (the bytes of ``header`` it was
    built from): each templated declaration of its plan an open Function,
    instantiated on demand with this compiler, flags, options and cache."""
    ctx = Context(header, plan.header_text, name, cxx, flags, cache_dir, strict, options, source)
    open_functions(lib, ctx, lib._bindthem_.metadata["declarations"])


def open_functions(lib, ctx, declarations, listed=None):
    """Makes an open Function for each bindable templated declaration of
    ``declarations`` (``lib``'s plan's, in its order; one per name: the
    first) and puts it in ``lib``; a function ``listed`` already bound
    (on_demand=True with a YAML) keeps its overloads in the open one.
    Returns the names made open. The core gives each its parameter names,
    positional-only ones and signature, from the declaration."""
    made = []
    for index, d in enumerate(declarations):
        if not d["template"] or not d["bindable"] or d["static"] or d["global"] or d["device"]:
            continue
        if d["name"] in made or not d["name"].isidentifier() or keyword.iskeyword(d["name"]) \
                or (d["name"].startswith("__") and d["name"].endswith("__")):
            continue  # a name no kernel can have (the core said why, in left_out)
        old = own(lib, d["name"])
        fn = _core.open_function(
            lib._bindthem_.plan, index, lib.__name__, lib._bindthem_, ctx.options,
            lib._bindthem_.handle, OPEN_MAX)
        op = _Open(ctx, d, fn.parameters)
        if old is not None:
            try:
                fn._add(old)
            except (TypeError, ValueError):  # listed under other parameters: stays as listed
                continue
        with _registry_lock:
            _opens[fn] = op
        setattr(lib, d["name"], fn)
        made.append(d["name"])
    lib.__all__ = sorted(set(lib.__all__) | set(made))
    info = lib._bindthem_
    info.left_out = [x for x in info.left_out if x["name"] not in made]
    return made


def with_instantiations(meta, header, made, strict=False):
    """meta (parse_header's dict) with the overloads of ``made``
    ([(function, types)]) added to its functions, as an open build binds
    them once made (stubs); those it lists already are not added twice."""
    if not made:
        return meta
    text = "".join(yaml_lines(n, t) for n, t in dict.fromkeys(
        (n, tuple(t)) for n, t in made))
    with tempfile.TemporaryDirectory(prefix="bindthem-on-demand-") as tmp:
        yml = os.path.join(tmp, "instantiate.yml")
        with open(yml, "w") as f:
            f.write(text)
        extra = _core.parse_header(header, yml, strict=strict)
    funcs = {f["name"]: f for f in meta["functions"]}
    for f in extra["functions"]:
        have = funcs.get(f["name"])
        if have is None:
            meta["functions"].append(f)
            funcs[f["name"]] = f
            continue
        sigs = {ov["signature"] for ov in have["overloads"]}
        have["overloads"] += [ov for ov in f["overloads"] if ov["signature"] not in sigs]
    return meta


def deduce(decl, args, kwargs, names):
    """The template arguments (a tuple of C types) for a call of the
    declaration ``decl`` with ``args`` and ``kwargs``: each template
    parameter from the dtype of an array declared with it, else from the
    scalars declared with it. ``names``: the Python names of its parameters
    (the open Function's ``parameters``, the core's), which the keywords
    are. None when the arguments do not bind to the parameters (the
    caller's own TypeError says why); TypeError naming the conflicting or
    undeducible parameters otherwise."""
    params = dict(zip(names, _python_params(decl)))
    if len(args) > len(params):
        return None
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in given or k not in params:
            return None
        given[k] = v
    found, problems = {}, []
    for t in decl["template"]:
        seen, silent = [], []  # (C type, parameter, what); arguments that say nothing
        for array in (True, False):
            if seen:
                break  # an array fixes the parameter: scalars only where none did
            for name, p in params.items():
                if p["type"] != t or p["array"] != array or name not in given:
                    continue
                v = given[name]
                dt = getattr(v, "dtype", None) if array else None
                c = _DTYPE_C.get(np.dtype(dt).name) if dt is not None else None
                what = "%s array" % np.dtype(dt).name if dt is not None else type(v).__name__
                if not array:
                    c = _scalar_c(v)
                if c is None:
                    silent.append("%s (%s)" % (name, what))
                else:
                    seen.append((c, name, what))
        kinds = list(dict.fromkeys(c for c, _, _ in seen))
        if len(kinds) > 1:
            problems.append("%s conflicts: %s" % (t, ", ".join(
                "%s from %s (%s)" % (c, n, w) for c, n, w in seen)))
        elif not kinds:
            problems.append("%s cannot be deduced: %s" % (
                t, "no argument declared with it was given" if not silent else
                "the arguments declared with it (%s) have no type bindthem maps to a C type"
                % ", ".join(silent)))
        if kinds:
            found[t] = kinds[0]
    if problems:
        types = [found.get(t, "<%s>" % t) for t in decl["template"]]
        raise TypeError(
            "%s(): cannot instantiate template<%s> for this call: %s. Pass arguments that fix "
            "each template parameter (an array declared with it, or a scalar), or list the "
            "instantiation in instantiate.yml:\n%s" % (
                decl["name"], ", ".join(decl["template"]), "; ".join(problems),
                yaml_lines(decl["name"], types)))
    return tuple(found[t] for t in decl["template"])


def made_overloads(fn):
    """The metadata of the overloads open Function fn made on demand, in the
    order made (none for any other object)."""
    with _registry_lock:
        op = _opens.get(fn)
    return list(op.made.values()) if op is not None else []


def call(fn, args, kwargs, error):
    """An open Function's miss: instantiate what the call needs, add it, call
    again; else raise ``error`` (the dispatcher's TypeError) or why the
    template arguments cannot be deduced."""
    with _registry_lock:
        op = _opens.get(fn)
    if op is None:
        raise error
    types = deduce(op.decl, args, kwargs, op.names)
    if types is None or types in op.made:
        raise error  # the call does not bind, or the instantiation takes other arguments
    key = (id(op), types)
    with _registry_lock:
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:  # the GIL is released while the compiler runs
        if types not in op.made:
            _instantiate(fn, op, types)
    return fn(*args, **kwargs)


# what a failed instantiation's error says: whether this process compiles it again
_REMEMBERED = {False: " (remembered: the compiler rejected it; this process does not compile "
                      "it again)",
               True: "; not remembered: the next call compiles again"}


def _failure_key(op, types):
    ctx = op.ctx
    return (hashlib.sha256(ctx.header_text).hexdigest(), ctx.cxx, tuple(ctx.flags),
            op.decl["name"], types)


@contextlib.contextmanager
def _includes_as_built(ctx):
    """(folders, copied), held: the folders whose local includes an
    instantiation reads, as the build read them: the header's own while the
    build's files (header, YAML, local includes) are unchanged on disk, else
    first the folder of the copy of them the build cache keeps
    (``<cache>/sources/``, locked against eviction while the compile reads
    it; ``copied`` then says so; an include outside the header's folder,
    never carried, is still read where the build read it), so that one
    Library never mixes two versions of its header or includes, and a header
    removed since (a notebook cell's, evicted from the cache) is no failure.
    The header itself is always the build's bytes (ctx.header_text: the
    compiler reads a snapshot of them)."""
    source, folder = ctx.source, os.path.dirname(ctx.header)
    if source is None or source.kind != "build":
        yield [folder], False
        return
    with contextlib.ExitStack() as held:
        try:
            header = held.enter_context(source._materialised(ctx.cache_dir))[0]
        except BindError as e:
            raise BuildError("instantiating on demand: %s" % e) from None
        if header == source.header:
            yield [folder], False
        else:
            yield [os.path.dirname(header), folder], True


def compile_one(ctx, plan, line, folders, what):
    """The Library of one instantiation made on demand:
    a unit of the snapshot of ``plan``'s bytes (the build's header text with
    a YAML that lists that instantiation, whose line is ``line``) compiled
    through the cache with the build's compiler and flags (a process: the
    GIL is released while it runs), its local includes read from
    ``folders`` (the header's, or the cache's copy of the build's first),
    bound from ``plan``."""
    cxx = shell_words(ctx.cxx or os.environ.get("CXX") or "c++")
    stem = os.path.splitext(os.path.basename(ctx.header))[0]
    source = "\n".join([PRELUDE.rstrip("\n"), '#include "%s"' % snapshot_name(ctx.header), "",
                        line]) + "\n"
    command = _unit_command(cxx, ctx.flags, [f for d in folders for f in snapshot_flags(d)])

    def load(path):
        return _make(path, ctx.header, None, ctx.name, False, None, ctx.options, plan)

    def compile_snapshot(src, dep, out):
        write_snapshot(os.path.dirname(src), plan)
        return command(src, dep, out)

    return compile_cached(
        key_parts=(ctx.header, plan.header_sha256, "on demand", plan.yaml_sha256, source,
                   "\0".join(folders), _compiler_id(cxx, ctx.cache_dir),
                   "\0".join(cxx + ctx.flags)),
        cache_dir=ctx.cache_dir, folder_name=stem + "-on-demand", stem="lib" + stem, ext=".so",
        source=source, suffix=".cpp", what="compiling %s" % what, load=load,
        status="compiling %s with %s" % (what, os.path.basename(cxx[-1])),
        command=compile_snapshot, system_dirs=lambda: _system_dirs(cxx, ctx.flags))


def _carried(ctx, plan, name, types):
    """(Library, None) of instantiation name<types> from the library an
    unpickled Library's pickle carries for it (made on demand where it was
    pickled: carry.bind_carried), or (None, why not; None when none was
    carried)."""
    made = ctx.source.made if ctx.source is not None else None
    binary = (made or {}).get("%s|%s" % (name, ",".join(types)))
    if binary is None:
        return None, None
    return carry.bind_carried(binary, ctx.name, ctx.cache_dir, lambda opened, path: _make(
        opened.name, ctx.header, None, ctx.name, False, None, ctx.options, plan))


def _instantiate(fn, op, types):
    ctx, name = op.ctx, op.decl["name"]
    what = "%s<%s>" % (name, ", ".join(types))
    fkey = _failure_key(op, types)
    why = None
    if fkey in _failed:
        text, output = _failed[fkey]
        raise BuildError(text, output=output)  # the text says it is remembered
    header, folders, copied = ctx.header, [os.path.dirname(ctx.header)], False
    try:
        # the build's bytes with a YAML of this one instantiation: no file read
        plan = _core.parse(header, "<on demand: %s>" % what, header_text=ctx.header_text,
                           yaml_text=yaml_lines(name, types).encode())
        made = [ov for f in plan.metadata()["functions"] if f["name"] == name
                for ov in f["overloads"]]
        lines = [ov["instantiation"] for ov in made]
        if len(lines) != 1 or not lines[0]:
            raise BuildError("instantiating %s on demand: the header does not instantiate it "
                             "with these types" % what)
        lib, why = _carried(ctx, plan, name, types)
        if lib is None:
            with _includes_as_built(ctx) as (folders, copied):
                lib = compile_one(ctx, plan, lines[0], folders, what)
    except BuildError as e:
        output = getattr(e, "output", "") or ""
        if ctx.cell:  # the compiler's lines about the header read as the cell's
            output = "\n".join(line for line in output.replace(header, ctx.cell)
                                .splitlines() if ".cpp" not in line)
        copied = ("" if not copied else
                  " (from the text %s and its local includes had when the Library was built, "
                  "kept in %s: they have changed on disk since, or are gone)"
                  % (header, folders[0]))
        transient = getattr(e, "transient", False)
        text = ("instantiating %s on demand (called with types no overload takes) failed%s: "
                "%s%s\n%s" % (what, copied, str(e).splitlines()[0].rstrip(":"),
                              _REMEMBERED[transient], output)).rstrip()
        if not transient:
            _failed[fkey] = (text, output)
        raise carry.noting(BuildError(text, output=output, transient=transient), why) from None
    fn._add(getattr(lib, name))
    op.made[types] = made[0]
    if ctx.source is not None:  # its pickles carry the library (carry.made_of)
        ctx.source.made_paths[(name, types)] = lib.__file__
        if ctx.source.on_demand is not None:
            ctx.source.on_demand.append([name, list(types)])
    _remember_seen(ctx, name, types)


# --- what was instantiated, kept in the cache for stubs (--on-demand-seen) ---

def _seen_name(header, header_text):
    return hashlib.sha256(os.path.abspath(header).encode() + b"\0" + header_text).hexdigest()[:32]


def _remember_seen(ctx, name, types):
    key = _seen_name(ctx.header, ctx.header_text)
    try:
        have = json.loads((group_read(ctx.cache_dir, "on-demand", key, "seen.json") or b"[]"))
        entry = [name, list(types)]
        if entry not in have:
            have.append(entry)
            group_write(ctx.cache_dir, "on-demand", key, "seen.json", json.dumps(have).encode())
    except (OSError, ValueError):  # a record for stubs only: never fails a call
        pass


def seen(header, cache_dir=None):
    """[(function, types)] the header's functions were instantiated with on
    demand (in any process using this cache), as recorded."""
    header = os.path.abspath(header)
    with open(header, "rb") as f:
        text = f.read()
    try:
        data = group_read(cache_dir, "on-demand", _seen_name(header, text), "seen.json")
        return [(n, tuple(t)) for n, t in json.loads(data or b"[]")]
    except (OSError, ValueError):
        return []
