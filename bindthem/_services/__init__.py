"""bindthem's services: what the API modules call. None imports an API module
(bindthem, library, package, setuptools, stubs, ipython, cuda, __main__,
_unpickle, _from_c); each imports the leaves (bindthem._base, errors, _core)
and the services before it in this order only:

1. ``status``: the one-line status of long compiles;
2. ``display``: Libraries and Functions rendered (notebooks, getsource);
   ``signature``: the types of their parameters, as stubs and
   ``inspect.signature`` show them;
3. ``loading``: what dlopen is handed (the bytes hashed are the bytes mapped);
4. ``cache``: the build cache (a package, its own modules in order);
5. ``carry``: the shared library a pickle carries beside its source, and
   how a worker loads it; ``travel``: a kernel by value, what a pickle
   carries and its checks;
6. ``binding``: the Library class and the one call of the core's bind (CPU
   and CUDA), and what a Library that binds less than its header says;
7. ``compile``: the build, compiling a header (a package: ``source``,
   ``compiler``, ``units``, ``ondemand``, ``kernels``, in that order);
8. ``packaging``: kernels inside a package (the manifest, its checks);
9. ``cuda``: CUDA's compilers (a package: ``nvcc``, then ``nvrtc``).

tests/api/test_import_graph.py checks the order, at module level and inside
functions.
"""
