"""Rich display of Libraries and Functions: IPython's ``_repr_html_`` and
``_repr_pretty_`` (Function's, a C type's, call in here), and the declarations
:func:`bindthem.getsource` reads from the header. It imports no API module:
what it renders comes in as arguments.

Everything comes from ``Library.metadata``: each function with its Python
signature, the first line of its doc, its overloads as C signatures and where
it came from (header file:line, shared library), then the header's constants
and enums. A preprocessed header's lines are its own file's
(:func:`source_file`).
"""

import html
import os

from . import preprocess

__all__ = ["function_html", "function_pretty", "library_html", "library_pretty"]  # _from_c: C

# A function with more overloads than this shows them folded in HTML.
FOLD_OVERLOADS = 4


def _summary(doc):
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _signature(f):
    # "axpy(a, x, y)": the first overload's Python signature (a CUDA kernel's
    # __text_signature__ adds the launch keywords, which displays leave out)
    sigs = getattr(f, "signatures", None)
    if sigs:
        return sigs[0]
    sig = getattr(f, "__text_signature__", None)
    return f.__name__ + (sig or "(...)")


def _meta(lib):
    """lib's metadata, even when a kernel is called ``metadata``."""
    return lib._bindthem_.metadata


def _preprocessor_output(path):
    """Whether the file at path is the C preprocessor's output (or unreadable)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(4096)
    except OSError:
        return True
    return preprocess.marker_file(first) is not None


def source_file(lib):
    """The header whose lines lib's metadata numbers: the metadata's, unless
    that file holds the preprocessor's output (an unpickled Library's copy),
    then the file the output's first line marker names (the header that was
    preprocessed)."""
    path = _meta(lib)["header"]
    if not lib._bindthem_.preprocessed or not _preprocessor_output(path):
        return path
    return preprocess.marker_file(lib._bindthem_.plan.header_text) or path


def _entry(lib, name):
    """The metadata ``functions`` entry of ``name``, or None."""
    if lib is None:
        return None
    for fn in _meta(lib)["functions"]:
        if fn["name"] == name:
            return fn
    return None


def _declarations(lib, name):
    """The header declarations that ``name``'s overloads instantiate, in order."""
    fn = _entry(lib, name)
    decls = _meta(lib)["declarations"]
    if fn is None:  # an open Function (instantiation on demand): its template
        f = getattr(lib, name, None)
        return [d for d in decls if d["name"] == name and d["template"]][:1] if getattr(
            f, "open", False) else []
    return [decls[i] for i in dict.fromkeys(ov["declaration"] for ov in fn["overloads"])]


def _origins(f):
    """``header:line`` of each declaration behind f (a Function or CUDA kernel)."""
    lib = f.library
    if lib is None:
        return []
    header = source_file(lib)
    return ["%s:%d" % (header, d["line"]) for d in _declarations(lib, f.__name__)]


def _read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


# --- text -------------------------------------------------------------------

def _c_names(f):
    """{C signature: symbol} of f's overloads bound by their plain C name (a
    C library: the header's C++ symbol, in the metadata, is not exported)."""
    lib = f.library
    fn = _entry(lib, f.__name__)
    if fn is None:
        return {}
    planned = {ov["signature"]: ov["symbol"] for ov in fn["overloads"]}
    return {sig: sym for sig, sym in zip(f.overloads, getattr(f, "symbols", ()))
            if sig in planned and planned[sig] != sym}


def _overload_text(sig, c_names):
    return sig + ("  [C name %s]" % c_names[sig] if sig in c_names else "")


def _function_lines(f, indent="  "):
    lines = []
    doc = _summary(f.__doc__)
    if doc:
        lines.append(indent + doc)
    c_names = _c_names(f)
    lines += [indent + "  " + _overload_text(sig, c_names) for sig in f.overloads]
    return lines


def _noun(f):
    """What f is called in displays: a CPU Function or a CUDA kernel."""
    return "bindthem CUDA kernel" if hasattr(f.__class__, "__getitem__") else "bindthem function"


ON_DEMAND = "open: a call with types no overload takes instantiates the template"


def function_text(f):
    """Multi-line description of f (a Function or CUDA kernel): signature,
    doc, overloads, origin."""
    n = len(f.overloads)
    lines = ["%s  # %s %s.%s, %d overload%s"
             % (_signature(f), _noun(f), f.__module__, f.__qualname__, n, "" if n == 1 else "s")]
    lines += _function_lines(f)
    if getattr(f, "open", False):
        lines.append("  " + ON_DEMAND)
    lib = f.library
    for origin in _origins(f):
        lines.append("  from " + origin)
    if lib is not None:
        lines.append("  library " + lib.__file__)
    return "\n".join(lines)


def _count(lib):
    """"3 functions", "1 CUDA kernel"."""
    n = len(lib.__all__)
    noun = lib._bindthem_.backend.noun
    return "%d %s" % (n, noun[:-1] if n == 1 else noun)


def _value(v):
    """A constant's or member's value as C would write it: ints in decimal, strings quoted."""
    return repr(v) if isinstance(v, str) else str(int(v))


def shown_enums(meta, classes):
    """The enums a display lists: the header's own, and those of included
    files whose name is in ``classes`` (the Library has their class)."""
    return [e for e in meta.get("enums") or []
            if e["in_header"] or (e["name"] and e["name"] in classes)]


def named_lines(meta, named=None, classes=None):
    """The lines that list a header's constants and enums (``bindthem show``
    and the text display): ``NAME = value  # line N``, then per enum its
    kind, name and members. ``named``: the Library's attributes (a name it
    left to a kernel is marked; the included enums listed are those it has a
    class of); ``classes``: else, the names of the included enums to list."""
    lines = []
    consts = meta.get("constants") or []
    if consts:
        lines.append("constants:")
        for c in consts:
            lines.append("    %s = %s  # line %d%s" % (c["name"], _value(c["value"]), c["line"],
                                                    _shadowed(c["name"], named)))
    if classes is None:
        classes = {n for n, v in (named or {}).items() if isinstance(v, type)}
    enums = shown_enums(meta, classes)
    if enums:
        lines.append("enums:")
    for e in enums:
        kind = "IntFlag" if e["flags"] else "IntEnum"
        where = ("line %d" % e["line"]) if e["in_header"] else "included"
        lines.append("    %s %s (%s, %s)%s" % (kind, e["name"] or "(anonymous)", e["type"], where,
                                               _shadowed(e["name"], named) if e["name"] else ""))
        lines += ["        %s = %s" % (n, _value(v)) for n, v in e["members"]]
    return lines


def _shadowed(name, named):
    return "" if named is None or name in named else "  (not an attribute: a kernel's name)"


def library_text(lib):
    meta = _meta(lib)
    lines = ["bindthem.Library %r: %s" % (lib.__name__, _count(lib)),
             "  header      " + source_file(lib)]
    if lib._bindthem_.preprocessed:
        lines.append("  read        through the C preprocessor")
    if meta.get("instantiate"):
        lines.append("  instantiate " + meta["instantiate"])
    lines.append("  library     " + lib.__file__)
    for name in lib.__all__:
        f = getattr(lib, name)
        lines.append("")
        lines.append("%s  # line %s" % (_signature(f), ", ".join(
            str(d["line"]) for d in _declarations(lib, name)) or "?"))
        lines += _function_lines(f)
    named = named_lines(meta, lib._bindthem_.named)
    if named:
        lines += [""] + named
    return "\n".join(lines)


def _pretty(p, cycle, obj, text):
    p.text(repr(obj) if cycle else text)


def function_pretty(f, p, cycle):
    """Function._repr_pretty_ (and a CUDA kernel's)."""
    _pretty(p, cycle, f, function_text(f))


def library_pretty(lib, p, cycle):
    """Library._repr_pretty_."""
    _pretty(p, cycle, lib, library_text(lib))


# --- HTML -------------------------------------------------------------------

def _code(text):
    return "<code>%s</code>" % html.escape(text)


def _overloads_html(f):
    c_names = _c_names(f)
    items = "<br>".join(_code(_overload_text(sig, c_names)) for sig in f.overloads)
    n = len(f.overloads)
    if getattr(f, "open", False):
        items += ("<br>" if items else "") + "<i>%s</i>" % ON_DEMAND
    if n > FOLD_OVERLOADS:
        return "<details><summary>%d overloads</summary>%s</details>" % (n, items)
    return items


def _row(f, where):
    doc = _summary(f.__doc__)
    return ("<tr><td style='text-align:left'>%s%s</td><td style='text-align:left'>%s</td>"
            "<td style='text-align:left'>%s</td></tr>"
            % (_code(_signature(f)), "<br>" + html.escape(doc) if doc else "",
               _overloads_html(f), where))


_HEAD = ("<thead><tr><th style='text-align:left'>function</th>"
         "<th style='text-align:left'>overloads (C)</th>"
         "<th style='text-align:left'>source</th></tr></thead>")


def function_html(f):
    """Function._repr_html_ (and a CUDA kernel's)."""
    lib = f.library
    where = "<br>".join(_code(o) for o in _origins(f))
    title = "<b>%s</b> %s" % (_noun(f), _code("%s.%s" % (f.__module__, f.__qualname__)))
    if lib is not None:
        title += " from %s" % _code(os.path.basename(lib.__file__))
    return "<div>%s<table>%s<tbody>%s</tbody></table></div>" % (title, _HEAD, _row(f, where))


def _named_html(meta, named):
    """The table of a header's constants and enums (empty when it has none)."""
    rows = ["<tr><td style='text-align:left'>%s</td><td style='text-align:left'>%s</td>"
            "<td style='text-align:left'>line %d</td></tr>"
            % (_code(c["name"]), _code(_value(c["value"])), c["line"])
            for c in meta.get("constants") or []]
    for e in shown_enums(meta, {n for n, v in named.items() if isinstance(v, type)}):
        members = ", ".join("%s = %s" % (n, _value(v)) for n, v in e["members"])
        rows.append("<tr><td style='text-align:left'>%s %s</td><td style='text-align:left'>%s"
                    "</td><td style='text-align:left'>%s</td></tr>"
                    % ("IntFlag" if e["flags"] else "IntEnum", _code(e["name"] or "(anonymous)"),
                       _code(members), "line %d" % e["line"] if e["in_header"] else "included"))
    if not rows:
        return ""
    head = ("<thead><tr><th style='text-align:left'>constant or enum</th>"
            "<th style='text-align:left'>value</th><th style='text-align:left'>source</th>"
            "</tr></thead>")
    return "<table>%s<tbody>%s</tbody></table>" % (head, "".join(rows))


def library_html(lib):
    """Library._repr_html_."""
    meta = _meta(lib)
    header = source_file(lib)
    title = "<b>bindthem.Library</b> %s: %s from %s" % (
        _code(lib.__name__), _count(lib), _code(header))
    if meta.get("instantiate"):
        title += " and %s" % _code(meta["instantiate"])
    title += "<br>library %s" % _code(lib.__file__)
    rows = []
    for name in lib.__all__:
        f = getattr(lib, name)
        lines = ", ".join(str(d["line"]) for d in _declarations(lib, name))
        rows.append(_row(f, _code("%s:%s" % (os.path.basename(header), lines))))
    return "<div>%s<table>%s<tbody>%s</tbody></table>%s</div>" % (
        title, _HEAD, "".join(rows), _named_html(meta, lib._bindthem_.named))
