"""Usage files for a generated stub, written from the header's metadata.

``good(module, meta)`` calls every overload with arguments of its exact
types (and again without the arguments that have defaults) and
``typing.assert_type``s the result; mypy --strict must pass it.

``bad(module, meta)`` makes one typing mistake per line, each line ending in
``# expect-error: KIND``; mypy must report an error on exactly those lines:

- ``index-dtype``: an integer array of a dtype no overload takes there
  (int64 where only int32 is instantiated, int16 where int32 and int64 are;
  a header without integer arrays gets a float for an int scalar instead);
- ``list``: a list where an array is required;
- ``precision``: float32 and float64 (or complex64 and complex128) mixed
  where the overloads take one precision;
- ``missing``: an argument without a default left out.
"""

from support import ASSERT_TYPE_IMPORT

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "longlong", "ulonglong")
DTYPES = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "longlong", "ulonglong", "float32", "float64", "complex64", "complex128")
WIDER = {"float32": "float64", "complex64": "complex128"}
SCALARS = {"int": "0", "float": "0.0", "complex": "0j", "bool": "False"}


def _params(ov):
    return [p for p in ov["params"] if p["size_of"] is None]


def _required(ov):
    return [p for p in _params(ov) if p.get("default") is None]


def _arg(p, dtype=None):
    if p["array"]:
        return "a_" + (dtype or p["dtype"])
    return SCALARS[p["python"]]


def _call(fn, args):
    return "%s(%s)" % (fn, ", ".join(args))


def _header(module):
    # Arrays are variables, as in real code: an inline numpy.zeros(...,
    # dtype=...) argument is inferred in the context of the overloads'
    # parameter types, and numpy's NDArray[Any] overload of zeros then
    # matches any of them, hiding dtype mistakes.
    lines = ["import numpy", "", "import %s" % module, ""]
    lines += ["a_%s = numpy.zeros(1, dtype=numpy.%s)" % (d, d) for d in DTYPES]
    return lines + [""]


def good(module, meta):
    lines = _header(module) + [ASSERT_TYPE_IMPORT, ""]
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            ret = ov["return"]["python"]
            calls = [_call(fn["name"], [_arg(p) for p in _params(ov)])]
            if len(_required(ov)) < len(_params(ov)):
                calls.append(_call(fn["name"], [_arg(p) for p in _required(ov)]))
            lines += ["assert_type(%s.%s, %s)" % (module, c, ret) for c in calls]
    return "\n".join(lines) + "\n"


def _dtypes(ov):
    return tuple(p["dtype"] if p["array"] else p["python"] for p in _params(ov))


def _index_dtype(meta):
    for fn in meta["functions"]:
        ov = fn["overloads"][0]
        for i, p in enumerate(_params(ov)):
            if p["array"] and p["dtype"] in INT_DTYPES:
                taken = {_params(o)[i]["dtype"] for o in fn["overloads"]}
                for cand in ("int64", "int16", "int8", "uint8"):
                    if cand not in taken:
                        args = [_arg(q) for q in _params(ov)]
                        args[i] = _arg(p, cand)
                        return _call(fn["name"], args)
    # no integer array in the header (krylov.h): a float for an int scalar
    for fn in meta["functions"]:
        ov = fn["overloads"][0]
        for i, p in enumerate(_params(ov)):
            if not p["array"] and p["python"] == "int":
                args = [_arg(q) for q in _params(ov)]
                args[i] = "0.5"
                return _call(fn["name"], args)
    return None


def _list(meta):
    for fn in meta["functions"]:
        ov = fn["overloads"][0]
        for i, p in enumerate(_params(ov)):
            if p["array"]:
                args = [_arg(q) for q in _params(ov)]
                args[i] = "[0]"
                return _call(fn["name"], args)
    return None


def _precision(meta):
    """Prefer a mix between two arrays of one template parameter (same dtype
    in the overload); else any single-precision array made double."""
    fallback = None
    for fn in meta["functions"]:
        taken = {_dtypes(o) for o in fn["overloads"]}
        for ov in fn["overloads"]:
            params = _params(ov)
            dts = _dtypes(ov)
            for i, p in enumerate(params):
                if not (p["array"] and p["dtype"] in WIDER):
                    continue
                mixed = dts[:i] + (WIDER[p["dtype"]],) + dts[i + 1:]
                if mixed in taken:
                    continue
                args = [_arg(q) for q in params]
                args[i] = _arg(p, WIDER[p["dtype"]])
                call = _call(fn["name"], args)
                if dts.count(p["dtype"]) > 1:
                    return call
                fallback = fallback or call
    return fallback


def _missing(meta):
    for fn in meta["functions"]:
        params = _required(fn["overloads"][0])
        if params:
            return _call(fn["name"], [_arg(q) for q in params[:-1]])
    return None


MISTAKES = (("index-dtype", _index_dtype), ("list", _list), ("precision", _precision),
            ("missing", _missing))


def bad(module, meta):
    """The bad-usage file's text; raises if a mistake can't be made."""
    lines = _header(module)
    for kind, make in MISTAKES:
        call = make(meta)
        if call is None:
            raise ValueError("%s: cannot make a %r mistake" % (module, kind))
        lines.append("%s.%s  # expect-error: %s" % (module, call, kind))
    return "\n".join(lines) + "\n"


def expected_errors(text):
    """{line number: kind} of the ``# expect-error`` lines."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if "# expect-error: " in line:
            out[n] = line.rsplit("# expect-error: ", 1)[1].strip()
    return out
