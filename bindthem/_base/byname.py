"""The pickle entry points, named: what a Library's, a Function's and a Source's
pickle calls when it is loaded, found by module and attribute name as pickle's
own GLOBAL opcode finds a class, never imported where the pickle is written.

They are bindthem._unpickle's ``library``, ``function`` and ``source``. That
module binds an unpickled kernel with the build, the loader and the CUDA
back end, so it sits above every module that writes a pickle (the Library
class, a Source, the C core's Function through bindthem._from_c): those
reduce to ``(LIBRARY, (source,))`` and the like, and the pickle holds
``getattr(importlib.import_module("bindthem._unpickle"), "library")``. A
pickle names only these three, so moving a module below them changes no
pickle. This is the one module outside bindthem's API that names a module
to import (tests/api/test_import_graph.py checks it).
"""

import importlib

__all__ = ["FUNCTION", "LIBRARY", "Named", "SOURCE", "UNPICKLE"]

UNPICKLE = "bindthem._unpickle"  # where the entry points are


class _Module:
    """A module by name: unpickled as ``importlib.import_module(name)``."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (importlib.import_module, (self.name,))


class Named:
    """``module.name``, found when called, and pickled as
    ``getattr(import_module(module), name)``: a reconstructor a pickle names
    without the pickling side importing it. Calling it (``copy.copy`` calls
    a reduced object's reconstructor in-process) imports the module then."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        return getattr(importlib.import_module(self.module), self.name)(*args)

    def __reduce__(self):
        return (getattr, (_Module(self.module), self.name))

    def __repr__(self):
        return "<%s.%s, by name>" % (self.module, self.name)


# One object each: a pickle of many kernels writes each name once (pickle's memo).
LIBRARY = Named(UNPICKLE, "library")  # (LIBRARY, (source,)): a Library
FUNCTION = Named(UNPICKLE, "function")  # (FUNCTION, (source, name)): a Function or CUDA kernel
SOURCE = Named(UNPICKLE, "source")  # (SOURCE, (fields,)): a Source, checked
