"""csrc/README.md's clean-up label rule, read off the C sources: a function
has at most one clean-up label (`error:` or `done:`), at its end, and any
other label is a message label that falls through into it."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "c"))
import layers  # noqa: E402

CLEANUP = {"error", "done"}
LABEL = re.compile(r"^(\w+):\s*$", re.M)  # a label alone on its line, at column 0
FUNCTION = re.compile(r"^\w[^;{}()]*\b(\w+)\([^;{}]*\)\s*\{\n(.*?)^\}", re.M | re.S)


def functions(text):
    """[(name, body)] for the top-level function definitions of one C file."""
    return [(m.group(1), m.group(2)) for m in FUNCTION.finditer(text)]


def labels_wrong(body):
    """Why a function body breaks the rule, or None."""
    found = LABEL.findall(body)
    cleanup = [x for x in found if x in CLEANUP]
    if len(cleanup) > 1:
        return "two clean-up labels %s" % cleanup
    others = [x for x in found if x not in CLEANUP]
    if others and (not cleanup or found[-1] not in CLEANUP or found.index(cleanup[0])
                   != len(found) - 1):
        return "label(s) %s that do not fall through into the clean-up label" % others
    return None


def test_the_checker_sees_what_it_checks():
    good = ("int f(void)\n{\n    if (x)\n        goto error;\n    return 0;\nerror:\n"
            "    return -1;\n}\n")
    two = "int g(void)\n{\n    goto done;\nerror:\n    x();\ndone:\n    return 0;\n}\n"
    stray = "int h(void)\n{\n    goto again;\nagain:\n    return 0;\n}\n"
    assert [n for n, _ in functions(good + two + stray)] == ["f", "g", "h"]
    assert [labels_wrong(b) for _, b in functions(good + two + stray)] == [
        None, "two clean-up labels ['error', 'done']",
        "label(s) ['again'] that do not fall through into the clean-up label"]


def test_one_cleanup_label_per_function():
    bad, seen = [], 0
    for path in layers.sources(exts=(".c",)).values():
        with open(path) as f:
            for name, body in functions(f.read()):
                seen += 1
                why = labels_wrong(body)
                if why:
                    bad.append("%s: %s(): %s" % (os.path.relpath(path, layers.ROOT), name, why))
    assert seen > 300, seen  # the pattern finds the functions
    assert bad == []
