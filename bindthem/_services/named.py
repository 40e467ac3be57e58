"""What a Library has besides its kernels: the header's ``#define``
constants, the members of the enums it declares, an ``enum.IntEnum``
(``IntFlag``) class per named enum and a NumPy structured dtype per struct or
union (:func:`named_attributes`, from the metadata's "constants", "enums" and
"structs"; the dtypes are the C core's). A kernel's name is never taken. The
Library (bindthem._services.binding) and its stub (bindthem.stubs) both list
these."""

from __future__ import annotations

import enum
import keyword
import re

__all__ = ["enum_class", "named_attributes", "named_enums", "named_structs", "named_values",
           "used"]

# a text that may hold a constant (an object-like #define with a value: not an include
# guard), an enum or a struct: else no metadata is built for them
_MAY_NAME = re.compile(rb"#[ \t]*define[ \t]+\w+[ \t]+\S|\b(?:enum|struct|union)\b")


# the Library's own attributes, which a kernel may take but a constant or enum does not
_OWN_NAMES = frozenset({"_bindthem_", "metadata", "unexported", "not_kernels"})


def _free(name, taken):
    """Whether a constant, enum member or enum class may take ``name`` as an
    attribute: an identifier that no kernel (nor one named before it) has,
    and not the Library's own (``__name__``, ``metadata``, ...)."""
    return (isinstance(name, str) and name.isidentifier() and name not in taken
            and not (name.startswith("__") and name.endswith("__")) and name not in _OWN_NAMES)


def _int_value(self, proto):
    return (int, (int(self),))


def enum_class(e, module):
    """The ``enum.IntEnum`` (``enum.IntFlag`` when its ``flags``) of a metadata
    enum (``{"name", "members", "flags", ...}``), of module ``module``; its
    members pickle as plain ints (the Library is no importable module).
    None when Python's enum refuses its members' names."""
    base = enum.IntFlag if e["flags"] else enum.IntEnum
    members = [(n, v) for n, v in e["members"]]
    plain = [(n, v) for n, v in members if n.isidentifier() and not keyword.iskeyword(n)
             and not (n.startswith("_") and n.endswith("_"))]
    for names in (members, plain):
        try:
            cls = base(e["name"], names, module=module, qualname=e["name"])
        except (TypeError, ValueError):
            continue
        cls.__reduce_ex__ = _int_value  # type: ignore[assignment]
        return cls
    return None


def _member(cls, value):
    """cls's member of value (an int when cls is None or lacks it)."""
    try:
        return cls(value) if cls is not None else value
    except ValueError:
        return value


def used(meta, what):
    """The names of the ``what`` ("enum", "struct") that a parameter or the
    return of a bound overload has."""
    out = set()
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            for t in (*ov.get("params", ()), ov.get("return") or {}):
                if t.get(what):
                    out.add(t[what])
    return out


def named_enums(meta):
    """The enums that get a class: each named one the header itself declares,
    and each that a bound function takes or returns (the first of a name)."""
    used_names = used(meta, "enum")
    out = {}
    for e in meta.get("enums", ()):
        if e["name"] and e["name"] not in out and (e["in_header"] or e["name"] in used_names):
            out[e["name"]] = e
    return list(out.values())


def named_structs(meta):
    """The structs and unions that get a dtype attribute (the C core makes
    their dtypes, bt_struct_py.h): each named one with a layout that the
    header itself declares or a bound function takes or returns, and the
    structs their fields hold; in the header's order, the first of a name."""
    first = {}
    for s in meta.get("structs", ()):
        if s["name"] and s["reason"] is None:
            first.setdefault(s["name"], s)
    todo = [n for n, s in first.items() if s["in_header"]] + sorted(used(meta, "struct"))
    keep = set()
    while todo:
        n = todo.pop()
        if n in first and n not in keep:
            keep.add(n)
            todo += [f["struct"] for f in first[n]["fields"] if f.get("struct")]
    return [s for n, s in first.items() if n in keep]


def named_attributes(meta, functions):
    """What a Library of ``meta`` has besides its kernels (``functions``, the
    names bound), in order, as ``[(name, what, item)]``: each constant of the
    header (``what`` "constant", ``item`` its metadata dict), each member of
    each enum the header itself declares ("member", ``(enum dict, value)``),
    then each enum of :func:`named_enums` ("enum", its dict), then each
    struct of :func:`named_structs` ("struct", its dict: a NumPy dtype). A
    name already taken (a kernel's, or an earlier one's) is left to what took
    it. The Library and its stub both list these."""
    taken = set(functions)
    out = []

    def add(name, what, item):
        if _free(name, taken):
            taken.add(name)
            out.append((name, what, item))

    for c in meta.get("constants", ()):
        add(c["name"], "constant", c)
    for e in meta.get("enums", ()):
        if e["in_header"]:
            for n, v in e["members"]:
                add(n, "member", (e, v))
    for e in named_enums(meta):
        add(e["name"], "enum", e)
    for s in named_structs(meta):
        add(s["name"], "struct", s)
    return out


def named_values(plan, metadata, module, functions, dtypes=None):
    """{attribute: value} of :func:`named_attributes`: a constant's value, an
    enum member as its class's member (an int when its enum has no class),
    an enum's IntEnum (IntFlag) class, a struct's dtype (from ``dtypes``,
    the C core's ``{name: numpy.dtype}``; none without)."""
    if plan is None or not _MAY_NAME.search(plan.header_text):
        return {}
    meta = metadata()
    classes = {id(e): enum_class(e, module) for e in named_enums(meta)}
    named = {}
    for name, what, item in named_attributes(meta, functions):
        if what == "constant":
            named[name] = item["value"]
        elif what == "member":
            named[name] = _member(classes.get(id(item[0])), item[1])
        elif what == "struct":
            if item["name"] in (dtypes or {}):
                named[name] = dtypes[item["name"]]
        elif classes[id(item)] is not None:
            named[name] = classes[id(item)]
    return named
