"""bindthem's leaves: small modules that import only one another, bindthem.errors,
the C core (bindthem._core), the standard library and NumPy.

- ``files``: reading a source once, reading an open file whole, writing a
  file atomically;
- ``opts``: build()/load()'s ``gil=`` and ``copy_const=`` checked;
- ``types``: the type aliases of the public API's annotations;
- ``instantiation``: an instantiation named in text (an instantiate.yml
  entry, a ``-t`` type list) and the C types a call can deduce;
- ``byname``: what a pickle calls on unpickling, named by module and
  attribute, never imported where the pickle is written.
"""
