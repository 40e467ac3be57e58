"""An example package whose kernels are compiled when its wheel is built
and bound at import: its users need no C++ compiler."""

import bindthem

# Binds kernels.h's library, compiled into this package by bindthem.setuptools
# (setup.py), after checking it was built from this header and YAML. The
# Library is registered as kernelpkg.kernels, typed by kernels.pyi.
bindthem.load_package(__name__, "kernels.h", "instantiate.yml")

from . import kernels  # noqa: E402

__all__ = ["kernels"]
