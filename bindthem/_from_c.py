"""What bindthem's C core calls in Python: each name here is looked up by C.

C (csrc/) finds these by name as ``bindthem._from_c.<name>`` (bt_from_c in
csrc/py/bt_function.c), so renaming or removing one breaks C at run time, not at
import: tests/core/test_from_c.py reads the names C asks for from csrc/ and
imports each. An entry point, at the top with the API (C calls up into
Python through it): at module level it imports bindthem.errors only (the
core imports it while ``bindthem._core`` is being made); the services it
hands each call to (display, instantiation on demand) on first use.
"""

from .errors import (
    BindError,
    BindValueError,
    BuildError,
    CudaError,
    HeaderError,
    InstantiateError,
    NoDriverError,
    NullHandleError,
    StatusError,
    SymbolError,
)

__all__ = ["BindError", "BindValueError", "BuildError", "CudaError", "HeaderError",
           "InstantiateError", "NoDriverError", "NullHandleError", "StatusError", "SymbolError",
           "bound_call", "callback_address", "dask_token", "function_html", "function_pointer",
           "function_pretty", "on_demand", "reduce_function", "signature"]


def function_html(function):
    """Function._repr_html_ (bindthem._services.display, imported on the first display)."""
    from ._services.display import function_html as html

    return html(function)


def function_pretty(function, p, cycle):
    """Function._repr_pretty_ (bindthem._services.display, imported on the first display)."""
    from ._services.display import function_pretty as pretty

    return pretty(function, p, cycle)


def signature(function):
    """Function.__signature__: its parameters annotated with the types its
    overloads take (bindthem._services.signature), from its Library's
    metadata and the overloads it made on demand; None where neither knows
    them (inspect then reads __text_signature__)."""
    from ._services.compile.ondemand import made_overloads
    from ._services.display import _entry
    from ._services.signature import signature as annotated_signature

    fn = _entry(function.library, function.__name__)  # None: no Library, or none made yet
    known = {ov["symbol"]: ov for ov in (fn["overloads"] if fn else ())}
    # a C function binds its C name where the library exports no C++ symbol
    known.update((fn["name"], ov) for ov in (fn["overloads"] if fn else ())
                 if not ov["template_args"] and fn["name"] not in known)
    known.update((ov["symbol"], ov) for ov in made_overloads(function))
    overloads = [known.get(symbol) for symbol in function.symbols]
    return annotated_signature(overloads) if None not in overloads else None


def bound_call(function):
    """Function.__call__ (bindthem._services.signature.BoundCall)."""
    from ._services.signature import BoundCall

    return BoundCall(function)


def reduce_function(info, name):
    """Function.__reduce__ (a CUDA kernel's too): the function by name, with
    its kernel's source (info is its Library's LibraryInfo): a pickle that
    names bindthem._unpickle.function (bindthem._base.byname)."""
    return info._reduce_function(name)


def dask_token(info, name):
    """Function.__dask_tokenize__ (a CUDA kernel's too)."""
    return info._token(name)


def on_demand(fn, args, kwargs, error):
    """An open Function's call that no overload takes (bt_function.c miss):
    instantiate the template for it, add it, call again
    (bindthem._services.compile.ondemand)."""
    from ._services.compile.ondemand import call

    return call(fn, args, kwargs, error)


def function_pointer(address, ctype):
    """A returned C function pointer (csrc/py/bt_call.c): a
    :class:`bindthem.FunctionPointer` of C type ``ctype``, None for NULL."""
    from ._base.fnptr import FunctionPointer

    return FunctionPointer(address, ctype) if address else None


def callback_address(obj, ctype):
    """A C function pointer's address for a callback parameter of C type
    ``ctype`` (csrc/py/bt_callback.c): a :class:`bindthem.FunctionPointer`'s
    when its type is ``ctype`` (its own type, a str, when not), an integer
    ``address`` attribute (numba.cfunc), a ctypes function pointer (a
    ``ctypes.CFUNCTYPE`` instance) or a cffi function pointer; False for a C
    pointer that is none of these (a cffi ``int *``, callable by its type
    only); None for anything else (a Python callable is then called through a
    closure). FunctionPointer, ctypes and cffi are asked only when already
    imported: no such object exists otherwise."""
    import sys

    fnptr = sys.modules.get("bindthem._base.fnptr")
    if fnptr is not None and isinstance(obj, fnptr.FunctionPointer):
        return obj.address if obj.ctype == ctype else obj.ctype
    address = getattr(obj, "address", None)
    if isinstance(address, int) and not isinstance(address, bool):
        return address
    ctypes = sys.modules.get("ctypes")
    if ctypes is not None and isinstance(obj, ctypes._CFuncPtr):
        return ctypes.cast(obj, ctypes.c_void_p).value or 0
    cffi = sys.modules.get("_cffi_backend")
    if cffi is not None and isinstance(obj, cffi._CDataBase):
        if cffi.typeof(obj).kind != "function":
            return False
        return int(cffi.cast(cffi.new_primitive_type("uintptr_t"), obj))
    return None
