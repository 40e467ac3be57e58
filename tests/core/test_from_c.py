"""The Python names bindthem's C core looks up (bindthem/_from_c.py) exist.

C finds them by string at run time (a display, a pickle, the core's import),
so a rename on the Python side would break only then: the names are read from
csrc/ with regexes, so this test follows C."""

import glob
import os
import re

from sources import ROOT

from bindthem import _core, _from_c, errors

CSRC = os.path.join(ROOT, "csrc")

CALL = re.compile(r'\bbt_from_c(?:_call)?\(\s*"(\w+)"')
ASK = re.compile(r'\bask_info\([^;]*?"(\w+)"\s*\)')  # bt_callable.c: _from_c.<fn>(info, name)
MACRO = re.compile(r"#define\s+(\w+)\((\w+)\)((?:[^\n]*\\\n)*[^\n]*)")


def names_in(text):
    """The _from_c names one C file asks for."""
    found = set(CALL.findall(text)) | set(ASK.findall(text))
    for macro, arg, body in MACRO.findall(text):
        if re.search(r"\bbt_from_c(?:_call)?\(\s*#%s\b" % arg, body):
            found |= set(re.findall(r"^\s*%s\((\w+)\)" % macro, text, re.M))
    return found


def c_names():
    out = {}
    for path in sorted(glob.glob(os.path.join(CSRC, "**", "*.[ch]"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in names_in(text):
            out.setdefault(name, []).append(os.path.relpath(path, CSRC))
        # C imports no other bindthem module by name: _from_c is the one door
        for mod in re.findall(r'PyImport_ImportModule\(\s*"(bindthem[\w.]*)"', text):
            assert mod == "bindthem._from_c", (path, mod)
    return out


def test_every_name_c_looks_up_is_in_from_c():
    names = c_names()
    assert {"function_html", "function_pretty", "reduce_function", "dask_token", "BindError",
            "CudaError", "NoDriverError"} <= set(names)  # the regexes see each kind of use
    missing = {n: where for n, where in names.items() if not hasattr(_from_c, n)}
    assert missing == {}, "C looks these up in bindthem._from_c, which lacks them: %s" % missing
    # and _from_c holds nothing C does not call
    assert sorted(_from_c.__all__) == sorted(names)


def test_the_regexes_follow_c():
    text = ('#define GET(name) \\\n    if (!(st->name = bt_from_c(#name))) \\\n        goto done;\n'
            '    GET(SomeError)\n    GET(OtherError)\n'
            'r = bt_from_c_call("shown", &self, 1);\n'
            'return ask_info(self, "asked");\n'
            '#define OTHER(x) PyObject_GetAttrString(m, #x)\n    OTHER(not_this)\n')
    assert names_in(text) == {"SomeError", "OtherError", "shown", "asked"}


def test_the_core_uses_the_classes_of_errors_py():
    for name in ("BindError", "HeaderError", "InstantiateError", "SymbolError", "BuildError",
                 "CudaError", "NoDriverError"):
        assert getattr(_core, name) is getattr(errors, name) is getattr(_from_c, name), name
