"""Scalar default arguments (tests/data/kernels/defaults.h): the header's
literal defaults become Python defaults, in calls, inspect.signature, the
metadata and the docstring; other defaults leave the parameter required."""

import inspect
import textwrap

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import untyped

import bindthem

REPORT = ["w", "f", "n", "u", "on", "c", "nl", "s", "oct", "neg", "off"]


@pytest.fixture(scope="session")
def defaults(libdir):
    lib = compile_cxx(libdir, "defaults", kernel("defaults.h"), kernel("defaults.yml"))
    return bindthem.load(lib, kernel("defaults.h"), kernel("defaults.yml"))


def expected_report(sig, **given):
    """What report() writes: each argument as its C type holds it, as a double."""
    types = dict(zip(REPORT, [np.float64, np.float32, np.int64, np.uint32, np.bool_, np.int8,
                              np.int8, np.int8, np.int32, np.float64, np.bool_]))
    out = []
    for name in REPORT:
        v = given.get(name, sig.parameters[name].default)
        if isinstance(v, str):
            v = ord(v)
        out.append(np.float64(types[name](v)))
    return np.array(out)


def test_signature_shows_the_literals(defaults):
    sig = inspect.signature(defaults.report)
    assert {k: p.default for k, p in sig.parameters.items()} == {
        "out": inspect.Parameter.empty, "w": 1e-3, "f": 1.5, "n": -7, "u": 0x10, "on": True,
        "c": "T", "nl": "\n", "s": -3, "oct": 0o17, "neg": -0.25, "off": False}
    assert defaults.report.__text_signature__ == (
        "(out, w=0.001, f=1.5, n=-7, u=16, on=True, c='T', nl='\\n', s=-3, oct=15, "
        "neg=-0.25, off=False)")
    assert defaults.report.signatures == ("report" + defaults.report.__text_signature__,)
    # one Python signature: the docstring is the header comment
    assert defaults.report.__doc__ == (
        "Writes every scalar it receives into out, as doubles, in order.")


def test_omitted_arguments_get_the_defaults(defaults):
    sig = inspect.signature(defaults.report)
    out = np.full(11, np.nan)
    defaults.report(out)
    np.testing.assert_array_equal(out, expected_report(sig))


def test_defaults_by_keyword_and_position(defaults):
    sig = inspect.signature(defaults.report)
    out = np.full(11, np.nan)
    defaults.report(out, 2.0, n=5, c="A", off=True)
    np.testing.assert_array_equal(out, expected_report(sig, w=2.0, n=5, c="A", off=True))
    # every argument given: the same as the defaults passed explicitly
    explicit = np.full(11, np.nan)
    defaults.report(explicit, *[sig.parameters[n].default for n in REPORT])
    defaults.report(out)
    np.testing.assert_array_equal(explicit, out)
    with pytest.raises(TypeError, match=r"report\(\) takes from 1 to 12 positional arguments "
                                        r"but 13 were given"):
        defaults.report(out, *range(12))
    with pytest.raises(TypeError, match=r"report\(\) missing 1 required positional "
                                        r"argument: 'out'"):
        defaults.report(w=1.0)


def test_defaults_are_trailing(defaults):
    assert defaults.tail(1) == 123
    assert defaults.tail(1, 5) == 153
    assert defaults.tail(1, c=9) == 129
    assert defaults.tail(a=4, b=0, c=0) == 400
    with pytest.raises(TypeError, match=r"tail\(\) missing 1 required positional argument: 'a'"):
        defaults.tail(b=1)


def test_complex_default(defaults):
    assert inspect.signature(defaults.rotate).parameters["by"].default == 2 + 0j
    assert defaults.rotate(1j) == 2j
    assert defaults.rotate(1j, 1j) == -1


def test_template_default_converts_per_instantiation(defaults):
    x = np.arange(3.0)
    for dtype in (np.float64, np.float32):
        y = np.zeros(3, dtype)
        assert defaults.relax(y, x.astype(dtype)) == 0.5
        np.testing.assert_array_equal(y, (dtype(0.5) * x.astype(dtype)).astype(dtype))
    # relax<int> refuses 0.5 for omega: there, omega must be given
    yi, xi = np.zeros(3, np.int32), np.arange(3, dtype=np.int32)
    assert defaults.relax(yi, xi, 2) == 2
    np.testing.assert_array_equal(yi, 2 * xi)
    with pytest.raises(TypeError) as e:
        defaults.relax(yi, xi)
    msg = str(e.value)
    assert msg.startswith("relax(): argument 'omega' (position 3) got nothing (it was left "
                          "out), expected int (int) (given the arguments before it).\n")
    # the overloads differ in their defaults: each Python signature is listed
    assert "    relax(y, x, omega, shift=0): int relax<int>(" in msg
    assert "    relax(y, x, omega=0.5, shift=0): float relax<float>(" in msg
    assert defaults.relax.signatures == ("relax(y, x, omega=0.5, shift=0)",) * 2 + (
        "relax(y, x, omega, shift=0)",)
    assert untyped(defaults.relax) == "(y, x, omega=0.5, shift=0)"
    assert defaults.relax.__doc__ == textwrap.dedent("""\
        Overloaded function.

        1. relax(y, x, omega=0.5, shift=0)

        y = omega * x + shift; the default omega converts per instantiation.

        2. relax(y, x, omega, shift=0)""")


def test_omitted_arguments_are_cached_like_others(defaults):
    y, x = np.zeros(2), np.ones(2)
    defaults.relax(y, x)
    defaults.relax(y, x, 0.25)
    before = defaults.relax._dispatch_info
    for _ in range(20):
        defaults.relax(y, x)
        defaults.relax(y, x, 0.25)
        defaults.relax(y, x, shift=1)
    after = defaults.relax._dispatch_info
    assert after["scans"] == before["scans"] + 1  # only shift= was new
    assert after["cached"] == before["cached"] + 1


@pytest.mark.parametrize("name", ["opaque", "refused", "before_required"])
def test_other_defaults_keep_the_parameter_required(defaults, name):
    f = getattr(defaults, name)
    params = inspect.signature(f).parameters.values()
    assert all(p.default is inspect.Parameter.empty for p in params)
    with pytest.raises(TypeError, match=r"%s\(\) missing %d required positional arguments"
                                        % (name, len(params))):
        f()


def test_metadata(defaults):
    meta = defaults.metadata
    decl = next(d for d in meta["declarations"] if d["name"] == "opaque")
    assert [p["default"] for p in decl["params"]] == [
        "STRIDE", "COUNT + 1", "sizeof(double)", "1.0 / 3"]
    fn = next(f for f in meta["functions"] if f["name"] == "opaque")
    assert [p["default"] for p in fn["overloads"][0]["params"]] == [None] * 4
    fn = next(f for f in meta["functions"] if f["name"] == "relax")
    assert [[p["default"] for p in ov["params"]] for ov in fn["overloads"]] == [
        [None, None, None, None, 0.5, 0], [None, None, None, None, 0.5, 0],
        [None, None, None, None, None, 0]]


LITERALS = [
    # (C type, default as written, the Python default or None: stays required)
    ("int", "0x1F", 31), ("int", "0X10", 16), ("int", "0b101", 5), ("int", "017", 15),
    ("int", "0", 0), ("unsigned long", "10ul", 10), ("long", "-9223372036854775808LL", -2**63),
    ("int", "-2147483648", -2**31), ("int", "2147483648", None), ("int", "+3", 3),
    ("int", "- 2", -2), ("unsigned int", "-1", None), ("unsigned long", "18446744073709551615u",
                                                        2**64 - 1),
    ("long", "18446744073709551616", None), ("int", "08", None), ("int", "0x", None),
    ("int", "1'000", None), ("int", "(1)", None), ("int", "1 + 1", None), ("int", "N", None),
    ("int", "1.5", None), ("int", "true", 1), ("int", "'a'", None),
    ("double", "1e-3", 1e-3), ("double", "1.5f", 1.5), ("double", ".5", 0.5), ("double", "5.", 5.0),
    ("double", "1.0L", 1.0), ("double", "0x1p-2", 0.25), ("double", "-1E+2", -100.0),
    ("double", "2", 2.0), ("double", "1e999", None), ("double", "1e", None),
    ("double", "0x1.8", None), ("double", "true", None), ("float", "1e300", None),
    ("bool", "true", True), ("bool", "false", False), ("bool", "1", True), ("bool", "2", True),
    ("bool", "-true", None), ("char", "'T'", "T"), ("char", "'\\n'", "\n"),
    ("char", "'\\x41'", "A"), ("char", "'\\101'", "A"), ("char", "'\\''", "'"),
    ("char", "'\\\\'", "\\"), ("char", "'\\0'", "\0"), ("char", "65", 65), ("char", "'ab'", None),
    ("char", "'\\q'", None), ("char", "'\\x100'", None), ("char", "u8'a'", None),
    ("char", "'\u00e9'", None), ("unsigned char", "'a'", None), ("char", "300", None),
    ("std::complex<double>", "1.5", 1.5 + 0j), ("std::complex<float>", "-2", -2 + 0j),
]


@pytest.mark.parametrize("ctype, text, want", LITERALS)
def test_literal_forms(tmp_path, ctype, text, want):
    h = tmp_path / "lit.h"
    h.write_text("#include <complex>\nint lit(const %s v = %s) { return 0; }\n" % (ctype, text),
                 encoding="utf-8")
    meta = bindthem.parse_header(h)
    (param,) = meta["declarations"][0]["params"]
    assert param["default"] == text
    (ov,) = meta["functions"][0]["overloads"]
    got = ov["params"][0]["default"]
    assert got == want and type(got) is type(want)
