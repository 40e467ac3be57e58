"""build()/load()'s gil=, copy_const=, handles= and null_handles=: the
policies and their check.

A leaf: pickles carry these options, and bindthem._services.travel
checks them with :func:`_options` before anything is bound.
"""

from .. import _core
from ..errors import BindTypeError, BindValueError

GIL_POLICIES = _core.GIL_POLICIES  # the C table (csrc/py/bt_opts.c), in the order of BT_GIL_*


NULL_HANDLES = ("raise", "none")  # what a NULL handle returned does: NullHandleError, or None


def _options(gil, copy_const, handles=None, null_handles=None):
    """build()/load()'s gil=, copy_const=, handles= and null_handles=, checked,
    as a Source carries them (the last two only when given)."""
    if isinstance(gil, dict):
        for fname, policy in gil.items():
            _check_gil(policy, "gil[%r]" % (fname,))
        gil = dict(sorted(gil.items()))
    else:
        _check_gil(gil, "gil")
    if not isinstance(copy_const, bool):
        raise BindTypeError("copy_const=%r: expected True or False" % (copy_const,))
    opts = {"gil": gil, "copy_const": copy_const}
    if handles is not None:
        if not isinstance(handles, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in handles.items()):
            raise BindTypeError("handles=%r: expected a dict {handle type name: destructor "
                                "function name}, e.g. {'gzFile': 'gzclose'}" % (handles,))
        opts["handles"] = dict(sorted(handles.items()))
    if null_handles is not None:
        if isinstance(null_handles, dict):
            for fname, what in null_handles.items():
                _check_null(what, "null_handles[%r]" % (fname,))
                if not isinstance(fname, str):
                    raise BindTypeError("null_handles=%r: its keys are function names"
                                        % (null_handles,))
            null_handles = dict(sorted(null_handles.items()))
        else:
            _check_null(null_handles, "null_handles")
        opts["null_handles"] = null_handles
    return opts


def _check_null(what, name):
    if what not in NULL_HANDLES:
        raise BindValueError("%s=%r: expected 'raise' (a NULL handle returned raises "
                             "bindthem.NullHandleError) or 'none' (it returns None)" % (name, what))


def _check_gil(policy, what):
    if policy not in GIL_POLICIES:
        raise BindValueError("%s=%r: expected %s" % (what, policy, _core.GIL_POLICY_TEXT))
