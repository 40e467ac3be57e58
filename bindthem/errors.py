"""Exceptions raised by bindthem: every class, the C core's too, is made here.

``BindError`` is the one root of what bindthem raises: about a header, an
instantiate.yml, a library or a build, and the CUDA driver's failures
(``CudaError``, also a ``RuntimeError`` as it was before it had this root).
Errors about a place in a file carry
``filename``, ``lineno`` and ``colno`` (1-based; ``None`` when unknown) and
print as ``file:line:col: message``.
"""

import os
import pickle
import sys
import warnings

__all__ = ["BindError", "HeaderError", "InstantiateError", "SymbolError", "BuildError",
           "BindValueError", "BindTypeError", "BindWarning", "BuildWarning", "PickleError",
           "CudaError", "NoDriverError", "NullHandleError", "StatusError"]


class BindError(Exception):
    """Base class of bindthem's errors."""


class _LocatedError(BindError):
    def __init__(self, message, filename=None, lineno=None, colno=None):
        super().__init__(message)
        self.filename = filename
        self.lineno = lineno
        self.colno = colno

    def __reduce__(self):
        return (type(self), (self.args[0], self.filename, self.lineno, self.colno))


class HeaderError(_LocatedError):
    """A kernel header could not be read, or uses what the dialect lacks."""


class InstantiateError(_LocatedError):
    """instantiate.yml is malformed or asks for something the header can't give."""


class SymbolError(BindError):
    """A kernel's symbol is missing from the shared library."""


class BuildError(BindError):
    """The C++ (or CUDA) compiler failed; ``output`` holds what it printed,
    ``command`` the command. ``transient`` is True when the failure is no
    verdict on the source, so the same build may succeed when run again:
    the compiler was killed by a signal or ran out of memory, a file it
    reads was missing or changed while it ran, or the disk was full.
    Instantiation on demand remembers only the other failures."""

    def __init__(self, message, output="", command=None, transient=False):
        super().__init__(message)
        self.output = output
        self.command = command
        self.transient = transient

    def __reduce__(self):
        return (type(self), (self.args[0], self.output, self.command, self.transient))


class BindValueError(BindError, ValueError):
    """load() or build() refuses an argument's value (``gil=`` naming a
    function the library does not bind, an ``arch=`` it cannot read). Also a
    ValueError, as it was before it was a BindError."""


class BindTypeError(BindError, TypeError):
    """load() or build() refuses an argument's type (``copy_const=`` that is
    not a bool). Also a TypeError, as it was before it was a BindError."""


class PickleError(BindError, pickle.UnpicklingError):
    """A pickle of a Library or Function that bindthem refuses before it
    writes, compiles or loads anything: a field of the wrong type or size, a
    carried name that is not a plain path inside the header's folder, or a
    content hash that is not the hash of what the pickle carries. Also a
    ``pickle.UnpicklingError``."""


class CudaError(BindError, RuntimeError):
    """A CUDA driver call failed; ``code`` is its CUresult (None when not from
    the driver). Also a RuntimeError, as it was before it was a BindError.
    ``bindthem.cuda.CudaError`` is this class."""

    code = None


class NoDriverError(CudaError):
    """No usable CUDA driver: libcuda missing, the toolkit's stub library, or
    no device."""


class NullHandleError(BindError, OSError):
    """A function that returns a handle (``gzopen``) returned NULL: ``str()``
    says which and C's ``errno`` after the call ("gzopen returned NULL:
    [Errno 2] No such file or directory"). ``errno`` and ``strerror`` are
    that errno's (None when the function set none), ``function`` the
    function's name. ``load(..., null_handles="none")`` (or ``{name:
    "none"}``) returns None instead. Also an ``OSError``."""

    def __init__(self, message, errno=0, function=None):
        super().__init__(message)
        self.errno = errno or None
        self.strerror = os.strerror(errno) if errno else None
        self.function = function

    def __str__(self):
        return self.args[0]

    def __reduce__(self):
        return (type(self), (self.args[0], self.errno or 0, self.function))


class StatusError(BindError, RuntimeError):
    """A function whose return value its annotation declares a status
    (``status: {ok: [...]}``, docs/arrays.rst) returned another value:
    ``status`` is that value, ``function`` the function's name, ``ok`` the
    annotation's first ok value as written, ``name`` the header's constant
    of that value named like it (``Z_BUF_ERROR`` beside ``Z_OK``), or None."""

    def __init__(self, function, status, ok, name=None):
        super().__init__("%s() returned status %d%s; %s is success"
                         % (function, status, " (%s)" % name if name else "", ok))
        self.function = function
        self.status = status
        self.ok = ok
        self.name = name

    def __reduce__(self):
        return (type(self), (self.function, self.status, self.ok, self.name))


class BindWarning(UserWarning):
    """bindthem bound less than it could have (e.g. nothing: templated
    functions without an instantiate.yml)."""


class BuildWarning(UserWarning):
    """Something about a build: the compiler's own warnings (its text is the
    message), an OpenMP pragma without an OpenMP flag, flags that drop -O3."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=BindWarning):
    """warnings.warn, attributed to the first caller outside bindthem (so that
    the filters and the ``file:line`` shown are the user's)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level += 1
        frame = frame.f_back
    warnings.warn(message, category, stacklevel=level)
