"""The README's example: build myheader.h's myfunc for the two type tuples of
instantiate.yml with bindthem.build, call both overloads, check the results.

Run it as ``python examples/run_example.py``; the compiled library is cached
under $BINDTHEM_CACHE (default ~/.cache/bindthem).
"""

import os

import numpy as np

import bindthem

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    myheader = bindthem.build(os.path.join(HERE, "myheader.h"),
                              os.path.join(HERE, "instantiate.yml"))
    print(myheader.__doc__)
    print(myheader.myfunc.__doc__)
    for T, F in [(np.float64, np.complex128), (np.float32, np.complex64)]:
        J = np.array([42, 1, 2], dtype=np.int32)
        x = np.zeros(4, dtype=T)
        y = np.zeros(2, dtype=F)
        i = myheader.myfunc(J, x, y, 3.5)
        print("myfunc(int32, %s, %s) -> %r; x = %s, y = %s"
              % (np.dtype(T).name, np.dtype(F).name, i, x, y))
        assert i == 42
        assert x[0] == 3.5 and not x[1:].any()
        assert y[0] == 7.5 + 8.25j and y[1] == 0
    try:
        myheader.myfunc(np.zeros(1, np.int64), np.zeros(1), np.zeros(1, np.complex128), 1.0)
    except TypeError as e:
        print("as expected, no conversion:", str(e).splitlines()[0])
    else:
        raise AssertionError("an int64 J must be refused")
    print("OK")


if __name__ == "__main__":
    main()
