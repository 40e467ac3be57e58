"""The types of a kernel's Python parameters, spelled as the stub spells
them, for the stub (bindthem.stubs) and for a Function's
``__signature__`` (what ``inspect.signature``, ``help()`` and IPython's
``f?`` show). Both read them from the metadata of the overloads (the C
core's facts); this module only spells them.

A Function's signature is its first overload's parameters (names, kinds,
defaults: its ``__text_signature__``), each annotated with the types the
overloads with those same parameters accept there, in YAML order, joined by
``|``: ``x: numpy.typing.NDArray[numpy.float64] |
numpy.typing.NDArray[numpy.float32]``. Which types go together is each
overload's: the stub lists them (``@overload``), and ``f.overloads`` as C
signatures. The annotations are the stub's text, shown as written (not
quoted, not evaluated).
"""

import inspect

__all__ = ["annotated", "BoundCall", "signature"]

_ARRAY = "numpy.typing.NDArray[numpy.%s]"
_CHAR = "int | str"
_RECORDS = "numpy.typing.NDArray[numpy.void]"  # a struct by pointer: records of its dtype
_RECORD = "numpy.void"  # a struct by value, or returned
# a fixed-size C array (uuid_t, double m[3][3]): its rank here, its exact shape in a comment
_SHAPED = "numpy.ndarray[tuple[%s], numpy.dtype[numpy.%s]]"


def _annotation(t, array):
    # both names come from the C core's type table (_core.scalar_types())
    if array:
        return _ARRAY % t["dtype"]
    return t["python"]


def _parameter(p):
    ann = _annotation(p, p["array"])
    if p.get("string"):  # the C core's: "str | bytes", "str | bytes | None" (nullable)
        return p["python"]
    if p.get("handle") or p.get("voidp"):
        return p["python"]  # the C core's: "bindthem.Handle", "bindthem.Handle | None"
    if p.get("struct"):  # a const pointer or a value takes a record or an array
        return (_RECORDS if p["array"] and not p["const"] else
                "%s | %s" % ((_RECORDS, _RECORD) if p["array"] else (_RECORD, _RECORDS)))
    if p["type"] == "char" and not p["array"]:
        return _CHAR  # the runtime takes a one-character str too
    if p.get("shape") and p["array"]:
        return _SHAPED % (", ".join(["int"] * len(p["shape"])), p["dtype"])
    return ann


def _returns(ov):
    ret = ov["return"]
    returns = (ret["python"] if ret.get("handle") or ret.get("string")  # the C core's spelling
               else _RECORD if ret.get("struct") else "None" if ret["python"] == "None"
               else _annotation(ret, False))
    if "results" in ov:  # an annotated function (docs/arrays.rst): what its calls return
        parts = [returns if r["name"] is None else _annotation(r, r["array"])
                 for r in ov["results"]]
        returns = ("None" if not parts else parts[0] if len(parts) == 1
                   else "tuple[%s]" % ", ".join(parts))
    return returns


def annotated(ov):
    """Overload ov's (a metadata ``overloads`` entry) Python parameters as
    (name, annotation, default) triples, the size parameters left out, and
    its return annotation. Names and the positional-only count
    (``ov["positional_only"]``) are the metadata's (the C core's one rule,
    csrc/core/bt_pyname.c). default is the metadata's value a call that
    leaves the parameter out passes, or None. A ``char`` is ``int | str``:
    the runtime takes a one-character str for it too."""
    params = tuple((p["python_name"], _parameter(p), p.get("default"))
                   for p in ov["params"] if p["python_name"] is not None)
    return params, _returns(ov)


class _Shown(str):
    """An annotation's text, which signatures show as it is (inspect quotes a
    plain str on Pythons before 3.14)."""

    __slots__ = ()

    def __repr__(self):
        return str(self)


def _union(texts):
    seen = []
    for text in texts:
        for part in text.split(" | "):
            if part not in seen:
                seen.append(part)
    return _Shown(" | ".join(seen))


def signature(overloads):
    """inspect.Signature of a Function from its overloads' metadata (in YAML
    order): the first's parameters (names, defaults, the positional-only
    ones: what its ``__text_signature__`` says), each annotated with the
    types of the overloads whose parameter names are the first's; or None
    without overloads (its Library is gone, or an open Function has made
    none yet)."""
    if not overloads:
        return None
    first, _ = annotated(overloads[0])
    names = tuple(p[0] for p in first)
    same = []
    for ov in overloads:
        params, returns = annotated(ov)
        if tuple(p[0] for p in params) == names:
            same.append(([p[1] for p in params], returns))
    posonly = overloads[0]["positional_only"]
    try:
        params = [inspect.Parameter(
            name, inspect.Parameter.POSITIONAL_ONLY if k < posonly
            else inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if default is None else default,
            annotation=_union(s[0][k] for s in same))
            for k, (name, _, default) in enumerate(first)]
        return inspect.Signature(params, return_annotation=_union(s[1] for s in same))
    except ValueError:  # a default before a parameter without one: the text's alone
        return None


class BoundCall:
    """Call self as a function."""

    # A Function's ``__call__``: calls it, with its signature. IPython's
    # ``f?`` shows a callable's ``__call__`` signature when it differs from
    # the object's; the type's own would read ``(*args, **kwargs)``.

    __slots__ = ("__self__",)

    def __init__(self, function):
        self.__self__ = function

    def __call__(self, *args, **kwargs):
        return self.__self__(*args, **kwargs)

    @property
    def __signature__(self):
        return inspect.signature(self.__self__)

    def __repr__(self):
        return "<bound call of %r>" % (self.__self__,)
