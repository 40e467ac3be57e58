"""What the API's tests (tests/api) share beyond tests/conftest.py:
`symbols_lib`, tests/data/kernels/symbols.h compiled with symbols_ok.yml
(plain() and tmpl<int> only: inl is inline (unused, so not emitted), stat is
static, tmpl<double> is not instantiated), for bindthem.load's missing
symbols."""

import pytest

from sources import compile_cxx, kernel


@pytest.fixture(scope="session")
def symbols_lib(libdir):
    return compile_cxx(libdir, "symbols", kernel("symbols.h"), kernel("symbols_ok.yml"))
