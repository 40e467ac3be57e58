"""Type aliases of the public API's annotations."""

from __future__ import annotations

import os
from typing import Literal, Mapping, Sequence, Union

#: A file name: ``str`` or ``pathlib.Path``.
StrPath = Union[str, "os.PathLike[str]"]
#: Compiler flags: one string (split as a shell would) or a list of them.
Flags = Union[str, Sequence[str]]
#: When a call releases the GIL (see ``bindthem.load``).
GilPolicy = Literal["auto", "release", "keep"]
#: One policy for a Library, or one per function name.
GilOption = Union[GilPolicy, Mapping[str, GilPolicy]]
#: What a NULL handle returned gives: one choice for a Library, or one per function name.
NullHandles = Union[Literal["raise", "none"], Mapping[str, Literal["raise", "none"]]]
#: CUDA architectures: 80, "sm_80", "compute_80", or a list of those.
Archs = Union[int, str, Sequence[Union[int, str]]]
