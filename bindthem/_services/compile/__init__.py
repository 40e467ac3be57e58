"""Compiling a header's kernels, bound as a Library (bindthem.build,
bindthem.compile_library, the command line's build, %%bindthem, unpickling).

The modules, one job each, in the order they import one another (this
package's ``__init__`` imports none: import the module that does the job):

- ``source``: the translation unit (the prelude, the header's snapshot, the
  explicit instantiations) and the snapshot of the header's bytes;
- ``compiler``: who the compiler is, and which include folders are its own;
- ``units``: a cold build split into parallel units, the precompiled prelude;
- ``ondemand``: a templated function instantiated when a call needs it;
- ``kernels``: the build itself (compile through the cache, bind, warn).

(Not named ``build``: a folder of that name is a setuptools build folder to
.gitignore and to ruff, which would skip it.)
"""
