"""An instantiation named in text: the instantiate.yml entry that lists one
(:func:`yaml_lines`), a list of C++ types as ``-t`` and ``--on-demand`` take it
(:func:`split_types`), the C types an instantiation on demand may be made with
(:data:`C_TYPES`, the C core's dtype table) and how many one open Function
takes (:data:`OPEN_MAX`). Below the Library, the build and pickling, which
all write or check these.
"""

from .. import _core

__all__ = ["C_TYPES", "OPEN_MAX", "split_types", "yaml_lines"]

OPEN_MAX = 256  # instantiations one open Function takes (on demand and listed)
# the scalar C types a pickle's on-demand list may name (they are written into C++ source)
C_TYPES = frozenset(t["c"] for t in _core.scalar_types() if t["c"] != "void")


def yaml_lines(name, types):
    """The instantiate.yml entry that binds ``name`` with ``types``."""
    return "- types:\n    - [%s]\n  functions: [%s]\n" % (", ".join(types), name)


def split_types(text):
    """``"int, std::complex<double>"`` -> ``["int", "std::complex<double>"]``:
    commas inside ``<>`` do not split. ValueError for an empty type."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "<") - (ch == ">")
        cur += ch
    parts.append(cur.strip())
    if not all(parts):
        raise ValueError("%r: expected C++ types separated by commas, e.g. \"int,double\""
                         % text)
    return parts
