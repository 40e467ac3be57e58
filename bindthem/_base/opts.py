"""build()/load()'s gil= and copy_const=: the policies and their check.

A leaf: pickles carry these options, and bindthem._services.travel
checks them with :func:`_options` before anything is bound.
"""

from .. import _core
from ..errors import BindTypeError, BindValueError

GIL_POLICIES = _core.GIL_POLICIES  # the C table (csrc/py/bt_opts.c), in the order of BT_GIL_*


def _options(gil, copy_const):
    """build()/load()'s gil= and copy_const=, checked, as a Source carries them."""
    if isinstance(gil, dict):
        for fname, policy in gil.items():
            _check_gil(policy, "gil[%r]" % (fname,))
        gil = dict(sorted(gil.items()))
    else:
        _check_gil(gil, "gil")
    if not isinstance(copy_const, bool):
        raise BindTypeError("copy_const=%r: expected True or False" % (copy_const,))
    return {"gil": gil, "copy_const": copy_const}


def _check_gil(policy, what):
    if policy not in GIL_POLICIES:
        raise BindValueError("%s=%r: expected %s" % (what, policy, _core.GIL_POLICY_TEXT))
