"""IPython and Jupyter integration: ``%load_ext bindthem``.

``%%bindthem NAME [-t TYPES]... [-i instantiate.yml] [--cxxflags=FLAGS] [--extra-cxxflags=FLAGS]
[--openmp] [--cxx CXX] [--jobs N]``
compiles the cell (a kernel header in bindthem's dialect) with
:func:`bindthem.build` and binds it as the Library ``NAME`` in the user's
namespace. The extension also makes ``f?`` and ``f??`` on a bound function
list its overloads, where it came from and (``??``) its source.

IPython is imported only here: bindthem does not depend on it.
"""

import hashlib
import html
import inspect
import json
import os
import re
import shlex
import sys
import warnings

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from . import _core
from ._base.instantiation import split_types as _split_types
from ._services import display as _display
from ._services.binding import Library, left_out_message
from ._services.cache import flag_list, using_group, write_once
from ._services.compile import ondemand
from ._services.compile.units import JOBS_HELP, jobs_argument
from .errors import BindError, BindWarning, BuildError, BuildWarning, HeaderError, InstantiateError
from .library import build, getsource

__all__ = ["BindthemMagics", "load_ipython_extension"]

CELL = "cell"  # what compiler messages and dialect errors call the cell's header


def split_types(text):
    """``"int, std::complex<double>"`` -> ``["int", "std::complex<double>"]``:
    commas inside ``<>`` do not split."""
    try:
        return _split_types(text)
    except ValueError:
        raise UsageError("-t %r: expected C++ types separated by commas, e.g. -t \"int,double\""
                         % text) from None


def instantiate_yaml(declarations, types):
    """The instantiate.yml that ``-t`` options ask for, and for each ``-t`` its
    line in that text: every type tuple goes to each templated function with
    as many template parameters (functions that no tuple fits are helpers and
    stay unbound); untemplated functions that the library exports are listed
    under ``null``."""
    tuples = [split_types(t) for t in types]
    templated, plain = {}, []
    for d in declarations:
        if not d["bindable"] or d["static"]:
            continue
        if d["template"]:
            templated.setdefault(len(d["template"]), []).append(d["name"])
        elif not d["inline"] and d["name"] not in plain:
            plain.append(d["name"])
    for text, tup in zip(types, tuples):
        if len(tup) not in templated:
            raise UsageError(
                "-t %r gives %d type%s, but no templated function in the cell has %d template "
                "parameter%s (%s)" % (text, len(tup), "" if len(tup) == 1 else "s", len(tup),
                                      "" if len(tup) == 1 else "s",
                                      _describe(declarations) or "none"))
    lines, where = ["# written by %%bindthem from its -t options"], {}
    for arity in sorted({len(tup) for tup in tuples}):
        lines.append("- types:")
        for i, tup in enumerate(tuples):
            if len(tup) == arity:
                lines.append("    - [%s]" % ", ".join(json.dumps(t) for t in tup))
                where[len(lines)] = types[i]
        lines.append("  functions: [%s]" % ", ".join(dict.fromkeys(templated[arity])))
    if plain:
        lines += ["- types: null", "  functions: [%s]" % ", ".join(plain)]
    return "\n".join(lines) + "\n", where


def _cell_text(text, header):
    """A BindWarning's text about the cell's header, with the header (which
    it names by its file name) called ``cell``."""
    return text.replace(header, CELL).replace(os.path.basename(header), CELL)


def _describe(declarations):
    names = ["%s<%s>" % (d["name"], ", ".join(d["template"])) for d in declarations
             if d["template"] and d["bindable"]]
    return ", ".join(names)


def _compiler_message(err, header):
    """The compiler's output for a cell: its header's path becomes ``cell``,
    so the line numbers read as the cell's; lines about the generated
    instantiation source (its path is in the command) are dropped."""
    generated = [a for a in (err.command or []) if a.endswith(".cpp")]
    keep = []
    for line in (err.output or str(err)).rstrip().splitlines():
        gen = next((g for g in generated if g in line), None)
        if gen and (line.startswith("In file included from") or "required from" in line):
            continue
        if gen:
            line = line.replace(gen, "<instantiations>")
        keep.append(line.replace(header, CELL))
    return keep


def _short(err, lines):
    """err, shown in IPython as ``lines`` instead of a traceback."""
    err._render_traceback_ = lambda: list(lines)
    return err


@magics_class
class BindthemMagics(Magics):
    """The ``%%bindthem`` cell magic."""

    @magic_arguments()
    @argument("name", help="Python name of the Library the cell becomes.")
    @argument("-t", "--types", action="append", default=[], metavar="TYPES",
              help='one type tuple ("int,double") for every templated function of the cell '
                   'with that many template parameters; repeatable.')
    @argument("-i", "--instantiate", metavar="YML",
              help="an instantiate.yml to use instead of -t.")
    @argument("--cxxflags", help='compiler flags that replace -O3 (write --cxxflags="-O2 -g"), '
              'as build(cxxflags=) does.')
    @argument("--extra-cxxflags", metavar="FLAGS",
              help='compiler flags appended after -O3 (or --cxxflags) and $CXXFLAGS, as '
                   'build(extra_cxxflags=) does (write --extra-cxxflags="-march=native").')
    @argument("--openmp", action="store_true",
              help="compile and link with -fopenmp, as build(openmp=True) does.")
    @argument("--cxx", help="the C++ compiler (default $CXX or c++).")
    @argument("-j", "--jobs", type=jobs_argument, metavar="N", help=JOBS_HELP + ".")
    @cell_magic
    def bindthem(self, line, cell):
        """Compile the cell, a kernel header in bindthem's dialect, and bind it.

        After the cell runs, NAME is a bindthem.Library in the user namespace;
        running an edited cell rebinds it (an unchanged cell comes from the
        build cache at once). Untemplated functions are bound as they are;
        templated ones once per -t tuple, or as -i's instantiate.yml says;
        without either, on demand: a call compiles the instantiation its
        argument types need (docs/on-demand.rst). The
        cell is compiled as a header written to bindthem's cache, with the
        current directory on the include path. Compiler and dialect errors
        name the cell's lines as ``cell:LINE:COL``.
        """
        try:
            argv = shlex.split(line)
        except ValueError as e:
            raise UsageError("%%bindthem: " + str(e)) from None
        args = self.bindthem.parser.parse_args(argv)
        if not args.name.isidentifier():
            raise UsageError("%%bindthem NAME: %r is not a Python name" % args.name)
        if args.types and args.instantiate:
            raise UsageError("%%bindthem takes -t or -i, not both")
        # the cell's folder in the cache is held (never evicted) until it is built
        with using_group(None, "cells", _cell_name(args, cell)) as folder:
            header, yml, where = self._write(args, cell, folder)
            lib = self._build(args, header, yml, where)
        if not lib.__all__:
            templated = _describe(lib.metadata["declarations"])
            why = left_out_message(header, lib._bindthem_.left_out, 0)
            raise UsageError("%%%%bindthem %s: nothing to bind%s\n%s" % (
                args.name, templated and (": the cell's templated functions (%s) need -t TYPES "
                                          "or -i instantiate.yml" % templated),
                _cell_text(why, header)))
        ondemand.set_cell(lib, CELL)
        self.shell.push({args.name: lib})

    def _build(self, args, header, yml, where):
        """The Library of the cell's header, its warnings printed as the
        cell's, its errors shown at the cell's lines."""
        extra = flag_list(args.extra_cxxflags, ()) + ["-I" + os.getcwd()]
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", BuildWarning)
                warnings.simplefilter("always", BindWarning)
                lib = build(header, yml, name=args.name, cxx=args.cxx, cxxflags=args.cxxflags,
                            extra_cxxflags=extra, openmp=args.openmp, jobs=args.jobs)
            for w in caught:
                if issubclass(w.category, BindWarning) and not lib.__all__:
                    continue  # said below, as a UsageError
                text = str(w.message).replace(header, CELL)
                if issubclass(w.category, BindWarning):
                    text = _cell_text(text, header)
                print("%%%%bindthem %s: warning: %s" % (args.name, text), file=sys.stderr)
        except BuildError as e:
            raise _short(e, ["%%%%bindthem %s: the compiler failed:" % args.name]
                         + _compiler_message(e, header)) from None
        except InstantiateError as e:
            raise _short(e, [self._yaml_error(e, yml, where).replace(header, CELL)]) from None
        except BindError as e:
            raise _short(e, ["%%%%bindthem %s: %s" % (args.name, str(e).replace(header, CELL))]
                         ) from None
        return lib

    @staticmethod
    def _yaml_error(err, yml, where):
        if err.filename == yml and err.lineno in where:
            # the generated YAML's path and entry mean nothing to the user
            msg = re.sub(r" in \[\d+\]\.types\[\d+\]", "", str(err).split(": ", 1)[-1])
            return "%%bindthem -t " + repr(where[err.lineno]) + ": " + msg
        return "%%bindthem: " + str(err)

    @staticmethod
    def _write(args, cell, folder):
        """Writes the cell (and the YAML -t asks for) to ``folder``, its entry
        in the cache (:func:`_cell_name`, held); returns (header, yml or None,
        -t line map)."""
        header = os.path.join(folder, args.name + ".h")
        _write_once(header, cell)
        yml, where = None, {}
        if args.instantiate:
            yml = os.path.abspath(args.instantiate)
        elif args.types:
            try:
                meta = _core.parse_header(header, None, strict=False)
            except HeaderError as e:
                raise _short(e, ["%%%%bindthem %s: %s" % (args.name, str(e).replace(header, CELL))]
                             ) from None
            text, where = instantiate_yaml(meta["declarations"], args.types)
            yml = os.path.join(folder, args.name + ".yml")
            _write_once(yml, text)
        return header, yml, where


def _cell_name(args, cell):
    """The name of the cell's folder in the cache (``cells/``, made safely,
    marked used: the cache's least-recently-used bound): a hash of the cell
    and the options that write its files."""
    return hashlib.sha256(("%s\0%s\0%r\0%s" % (args.name, cell, args.types,
                                                args.instantiate)).encode()).hexdigest()[:20]


def _write_once(path, text):
    """Writes path unless it already holds text (other kernels may be
    reading it); atomically, so a concurrent reader sees all or nothing."""
    write_once(os.path.dirname(path), os.path.basename(path), text.encode())


# --- f? and f?? ----------------------------------------------------------------

def _fields(obj, detail_level):
    """(title, text) rows that IPython's inspector shows for obj."""
    if isinstance(obj, _core.Function):
        # the signature help() shows: each parameter with the types the overloads take
        rows = [("Signature", obj.__name__ + str(inspect.signature(obj))),
                ("Overloads", "\n".join(obj.overloads))]
        origins = _display._origins(obj)
        if origins:
            rows.append(("Header", "\n".join(origins)))
        if obj.library is not None:
            rows.append(("Library", obj.library.__file__))
        rows.append(("Type", "bindthem.Function"))
        source = None
        if detail_level:
            try:
                source = getsource(obj)
            except (OSError, TypeError):
                pass
        if source:
            rows.append(("Source", source.rstrip("\n")))
        elif obj.__doc__:
            rows.append(("Docstring", obj.__doc__))
        return rows
    if isinstance(obj, Library):
        meta = obj.metadata
        rows = [("Type", "bindthem.Library"), ("Header", meta["header"])]
        if meta.get("instantiate"):
            rows.append(("Instantiate", meta["instantiate"]))
        rows += [("Library", obj.__file__),
                 ("Functions", "\n".join(_display._signature(getattr(obj, n))
                                         for n in obj.__all__))]
        if detail_level:
            try:
                rows.append(("Source", getsource(obj).rstrip("\n")))
            except OSError:
                pass
        return rows
    return None


def _hook(mime):
    def hook(data):
        if not hasattr(data, "obj"):
            return None
        rows = _fields(data.obj, data.detail_level)
        if rows is None:
            return None
        if mime == "text/plain":
            return rows
        return [(t, "<pre>%s</pre>" % html.escape(v)) for t, v in rows]
    return hook


def _install_inspector_hooks(shell):
    """f? and f?? on bindthem objects, through the inspector's mime_hooks
    (IPython 8.22 and later; earlier versions keep their default)."""
    try:
        from IPython.core.oinspect import InspectorHookData  # noqa: F401
    except ImportError:
        return
    inspector = getattr(shell, "inspector", None)
    if inspector is None or not hasattr(inspector, "mime_hooks"):
        return
    hooks = dict(inspector.mime_hooks)
    for mime in ("text/plain", "text/html"):
        hooks[mime] = _chain(_hook(mime), hooks.get(mime))
    inspector.mime_hooks = hooks


def _chain(mine, previous):
    """mine, then the hook installed before it; loading twice changes nothing."""
    if getattr(previous, "_bindthem", False):
        return previous
    if previous is None:
        hook = mine
    else:
        def hook(data):
            res = mine(data)
            return previous(data) if res is None else res
    hook._bindthem = True
    return hook


def load_ipython_extension(ipython):
    """Registers the %%bindthem magic and the inspector hooks."""
    ipython.register_magics(BindthemMagics)
    _install_inspector_hooks(ipython)

