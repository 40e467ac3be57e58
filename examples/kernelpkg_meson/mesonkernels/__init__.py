"""An example package built by meson-python: meson compiles its kernels when
the wheel is built, and bindthem binds them at import: its users need no C++
compiler."""

import bindthem

# Binds kernels.h's library, which meson.build linked with bindthem's flags,
# after checking it was built from this header and YAML (the manifest
# kernels.bindthem.json). The Library is registered as mesonkernels.kernels,
# typed by kernels.pyi.
bindthem.load_package(__name__, "kernels.h", "instantiate.yml")

from . import kernels  # noqa: E402

__all__ = ["kernels"]
