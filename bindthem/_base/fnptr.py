"""bindthem.FunctionPointer: a C function pointer that a bound function
returned (glibc's ``signal``, GLFW's ``glfwSetErrorCallback`` return the
previous one). A leaf: the C core makes one through
``bindthem._from_c.function_pointer``; a callback parameter reads it through
``bindthem._from_c.callback_address``."""

__all__ = ["FunctionPointer"]


class FunctionPointer:
    """A C function pointer returned by a bound function: its ``address``
    (an int) and its C type, ``ctype`` (``"int (*)(const void *, const void
    *)"``, as the header declares it). A NULL one is returned as None.

    A callback parameter of the same C type takes it, and the C function it
    points to is then called with no Python in between; a parameter of
    another type refuses it (TypeError). ``int(p)`` is the address:
    ``ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p)(int(p))`` calls it from
    Python. It is an address in this process, so it does not pickle.
    """

    __slots__ = ("_address", "_ctype")

    def __init__(self, address, ctype):
        if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
            raise ValueError("a function pointer's address is a positive int, not %r"
                             % (address,))
        if not isinstance(ctype, str):
            raise TypeError("ctype must be the C type as a str, not %s" % type(ctype).__name__)
        self._address = address
        self._ctype = ctype

    @property
    def address(self):
        """The address of the C function, an int."""
        return self._address

    @property
    def ctype(self):
        """Its C type, as the header spells it: ``"int (*)(int)"``."""
        return self._ctype

    def __int__(self):
        return self._address

    def __eq__(self, other):
        if not isinstance(other, FunctionPointer):
            return NotImplemented
        return (self._address, self._ctype) == (other._address, other._ctype)

    def __hash__(self):
        return hash((self._address, self._ctype))

    def __repr__(self):
        return "<bindthem.FunctionPointer %s at %#x>" % (self._ctype, self._address)

    def __reduce__(self):
        raise TypeError("a bindthem.FunctionPointer (%s) is an address in this process: it "
                        "does not pickle" % self._ctype)
