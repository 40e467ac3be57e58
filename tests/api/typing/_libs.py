"""Shared by the tests/api/typing runners: build the Libraries a spec names.

A spec (JSON) is ``{"cache_dir": DIR, "cxxflags": [...], "stubs": DIR,
"modules": [{"name": NAME, "header": PATH, "instantiate": PATH}]}``; each
Library is built with :func:`bindthem.build` and registered in
``sys.modules`` under the stub's module name, so that ``import NAME`` (which
is what ``mypy.stubtest`` does) finds it.
"""

import json
import sys

import bindthem


def load_spec(path):
    with open(path) as f:
        return json.load(f)


def build_all(spec):
    libs = {}
    for m in spec["modules"]:
        lib = bindthem.build(m["header"], m["instantiate"], name=m["name"],
                             cache_dir=spec["cache_dir"], cxxflags=spec.get("cxxflags"))
        sys.modules[m["name"]] = lib
        libs[m["name"]] = lib
    return libs
