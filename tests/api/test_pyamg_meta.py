"""pyamg's amg_core headers against pyamg's own generated bindings.

The oracle is independent of bindthem: pyamg's sdist ships, next to each
header, the ``*_bind.cpp`` its pybind11 generator wrote. For every function it
holds a wrapper ``_name(py::array_t<I> & Ap, const I n_row, ...)`` (arrays
without their ``_size``; const-ness of an array shows in ``.unchecked()``
versus ``.mutable_unchecked()``), ``m.def`` lines listing the instantiations,
and the docstring in ``R"pbdoc(...)pbdoc"``. These are read with regexes here
and compared with what bindthem.parse_header makes of the header and the
shared instantiate.yml.
"""

import os
import re

import pytest

from pyamg_sdist import HEADERS, amg_core_or_skip

import bindthem

pytestmark = pytest.mark.pyamg

# pyamg spells the YAML's types; parse_header gives bt_types' C names.
CNAME = {"int64_t": "long"}


@pytest.fixture(scope="module")
def core():
    return amg_core_or_skip()


@pytest.fixture(scope="module")
def yml(core):
    return os.path.join(core, "instantiate.yml")


def split_top(s):
    """'int, std::complex<float>, float' -> ['int', 'std::complex<float>', 'float']."""
    out, depth, cur = [], 0, ""
    for c in s:
        depth += (c == "<") - (c == ">")
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


WRAPPER = re.compile(r"template\s*<([^>]*)>\s*\n(\w+)\s+_(\w+)\((.*?)\)\s*\n\{(.*?)\n\}\n", re.S)
MDEF = re.compile(r'm\.def\("(\w+)",\s*&_(\w+)<(.*?)>,\s*\n(.*?)\);\n', re.S)
PYARG = re.compile(r'py::arg\("(\w+)"\)(\.noconvert\(\))?')
PBDOC = re.compile(r'R"pbdoc\((.*)\)pbdoc"\s*$', re.S)


def read_bind_cpp(path):
    """({cxx name: {template, ret, params}}, {python name: {overloads, doc}})."""
    with open(path) as f:
        src = f.read()
    wrappers = {}
    for m in WRAPPER.finditer(src):
        tparams = [t.split()[-1] for t in m.group(1).split(",")]
        body = m.group(5)
        params = []
        for p in split_top(m.group(4)):
            am = re.match(r"py::array_t<(\w+)>\s*&\s*(\w+)$", p)
            if am:
                t, n = am.groups()
                ro = re.search(r"\b%s\.unchecked\(\)" % n, body)
                rw = re.search(r"\b%s\.mutable_unchecked\(\)" % n, body)
                assert bool(ro) != bool(rw), (path, n)
                params.append({"name": n, "type": t, "const": bool(ro), "array": True})
            else:
                sm = re.match(r"(const\s+)?(.+?)\s+(\w+)$", p)
                assert sm, (path, p)
                params.append({"name": sm.group(3), "type": sm.group(2),
                               "const": bool(sm.group(1)), "array": False})
        wrappers[m.group(3)] = {"template": tparams, "ret": m.group(2), "params": params}
    defs = {}
    for m in MDEF.finditer(src):
        name, cxx, targs, rest = m.groups()
        f = defs.setdefault(name, {"overloads": [], "doc": None})
        f["overloads"].append({"cxx": cxx, "targs": [CNAME.get(t, t) for t in split_top(targs)],
                               "args": [(a, bool(nc)) for a, nc in PYARG.findall(rest)]})
        d = PBDOC.search(rest)
        if d:
            f["doc"] = d.group(1)
    return wrappers, defs


def yaml_function_order(path):
    """Function names of instantiate.yml in order (the `- name` lines), and remaps."""
    names, remaps, in_remaps = [], {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("remaps:"):
                in_remaps = True
            m = re.match(r"\s*-\s+(\w+)\s*:\s*(\w+)\s*$", line)
            if in_remaps and m:
                remaps[m.group(1)] = m.group(2)
            m = re.match(r"\s*-\s+(\w+)\s*(#.*)?$", line)
            if m and m.group(1) not in ("null",):
                names.append(m.group(1))
    return names, remaps


def norm_doc(doc):
    # pyamg's generator cuts a few leading characters from some lines
    # (bellman_ford_balanced, vertex_coloring_mis, truncate_rows_csr):
    # compare line by line without the indentation.
    return "\n".join(line.strip() for line in doc.strip().splitlines())


def subst(t, tparams, targs):
    return targs[tparams.index(t)] if t in tparams else t


@pytest.fixture(scope="module")
def metas(core, yml):
    return {h: bindthem.parse_header(os.path.join(core, h + ".h"), yml, strict=False)
            for h in HEADERS}


@pytest.mark.parametrize("stem", HEADERS)
def test_against_pybind11_bindings(core, yml, metas, stem):
    wrappers, defs = read_bind_cpp(os.path.join(core, stem + "_bind.cpp"))
    assert defs, "no m.def found in %s_bind.cpp" % stem
    meta = metas[stem]
    funcs = {f["name"]: f for f in meta["functions"]}
    # the same Python names ...
    assert sorted(funcs) == sorted(defs)
    # ... in YAML order (after remaps, first listing wins)
    order, remaps = yaml_function_order(yml)
    want = []
    for n in order:
        py = remaps.get(n, n)
        if py in funcs and py not in want:
            want.append(py)
    assert [f["name"] for f in meta["functions"]] == want
    decls = {}
    for d in meta["declarations"]:
        if d["bindable"]:
            decls.setdefault(d["name"], []).append(d)
    for name, f in defs.items():
        got = funcs[name]
        # overloads: C++ function and template arguments, in YAML order
        assert [(o["cxx"], o["targs"]) for o in f["overloads"]] == \
            [(o["function"], list(o["template_args"])) for o in got["overloads"]], name
        # docstring
        assert norm_doc(got["doc"]) == norm_doc(f["doc"]), name
        for cxx in {o["cxx"] for o in f["overloads"]}:
            w = wrappers[cxx]
            (d,) = decls[cxx]
            assert list(d["template"]) == w["template"], cxx
            ret = d["return"]
            assert {k: ret[k] for k in ("type", "const", "array")} == \
                {"type": w["ret"], "const": False, "array": False}, cxx
            # a plain scalar: no string, enum, handle, callback, struct or void *
            assert not any(ret[k] for k in ("string", "enum", "handle", "callback", "struct",
                                            "voidp")), cxx
            # the header's parameters less the _size ones are the wrapper's
            sized = [p for p in d["params"] if p["size_of"] is None]
            assert [{k: p[k] for k in ("name", "type", "const", "array")} for p in sized] \
                == w["params"], cxx
            # every array is followed by its const int-like _size
            for i, p in enumerate(d["params"]):
                if p["array"]:
                    s = d["params"][i + 1]
                    assert s["name"] == p["name"] + "_size" and s["size_of"] == p["name"]
                    assert not s["array"]
                elif p["size_of"] is not None:
                    assert d["params"][i - 1]["name"] == p["size_of"]
        # concrete overload params: wrapper types with the template args put in
        for o, g in zip(f["overloads"], got["overloads"]):
            w = wrappers[o["cxx"]]
            conc = [p for p in g["params"] if p["size_of"] is None]
            assert [(p["name"], p["type"], p["const"], p["array"]) for p in conc] == \
                [(p["name"], subst(p["type"], w["template"], o["targs"]), p["const"],
                  p["array"]) for p in w["params"]], (name, o["targs"])
            # py::arg(...).noconvert() marks exactly the arrays
            assert [(p["name"], p["array"]) for p in conc] == o["args"], name
            assert g["return"]["type"] == subst(w["ret"], w["template"], o["targs"])


def test_union_of_bound_names_is_the_yaml(core, yml, metas):
    order, remaps = yaml_function_order(yml)
    listed = set(order)
    bound_cxx = set()
    for meta in metas.values():
        for f in meta["functions"]:
            bound_cxx.update(o["function"] for o in f["overloads"])
    # independently: the listed names no header declares (`name(` in no header)
    texts = []
    for h in HEADERS:
        with open(os.path.join(core, h + ".h")) as f:
            texts.append(f.read())
    in_no_header = {n for n in listed
                    if not any(re.search(r"\b%s\s*\(" % n, t) for t in texts)}
    # pyamg 5.4.1 lists these four without declaring them in amg_core's headers
    assert in_no_header == {"print_it", "csr_matvec", "lloyd_cluster", "cluster_node_incidence"}
    assert {n for n in listed if all(n in m["missing"] for m in metas.values())} == in_no_header
    assert bound_cxx == listed - in_no_header
    # each listed name is bound by exactly one header and missing from the others
    for n in listed - in_no_header:
        assert sum(n not in m["missing"] for m in metas.values()) == 1, n
    py_names = set()
    for meta in metas.values():
        py_names.update(f["name"] for f in meta["functions"])
    assert py_names == {remaps.get(n, n) for n in listed - in_no_header}
    assert "fit_candidates" in py_names and "fit_candidates_real" not in py_names


def test_linalg_unbindable_helpers(metas):
    meta = metas["linalg"]
    skipped = {}
    for s in meta["skipped"]:
        skipped.setdefault(s["name"], set()).add(s["reason"])
    # `const T &x` binds (a scalar by reference: docs/arrays.rst); these are inline
    assert skipped["conjugate"] == {"inline/static; not exported by the library"}
    assert skipped["dot_prod"] == {
        "unbindable: parameter 'x' is a pointer with no 'x_size' after it"}
    assert skipped["QR"] == {"unbindable: unknown type 'std::vector<T>' of return value"}
    assert skipped["signof"] == {"inline/static; not exported by the library"}
    # scalars by reference bind (docs/arrays.rst): these helpers are inline
    for name in ("real", "imag", "mynorm", "mynormsq", "zero_real", "zero_imag"):
        assert skipped[name] == {"inline/static; not exported by the library"}, name
    for name in ("norm", "axpy", "transpose", "gemm", "svd_jacobi", "svd_solve",
                 "upper_tri_solve", "lower_tri_solve", "least_squares"):
        assert skipped[name] and all(r.startswith("unbindable: ") for r in skipped[name]), name
    unb = [d for d in meta["declarations"] if not d["bindable"]]
    assert unb and all(d["reason"] for d in unb)
    assert all(d["reason"] is None for d in meta["declarations"] if d["bindable"])
    assert [f["name"] for f in meta["functions"]] == [
        "pinv_array", "filter_matrix_rows", "csc_scale_rows", "csc_scale_columns"]
    # filter_matrix_rows is listed twice in the YAML's entry: kept once
    assert len(meta["functions"][1]["overloads"]) == 8


def test_print_it_missing_everywhere(metas):
    for stem, meta in metas.items():
        assert "print_it" in meta["missing"], stem
