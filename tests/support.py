"""Helpers for tests that start Python subprocesses.

A subprocess must import the same bindthem the tests import: the installed
one in CI (the source folder has no compiled _core there), the in-place build
in a developer's checkout. So it gets that package's parent folder first on
PYTHONPATH, and must not run with the source folder as its working directory
(``python -c``/``-m`` put the working directory before PYTHONPATH).
"""

import os

import bindthem

BINDTHEM_PATH = os.path.dirname(os.path.dirname(os.path.abspath(bindthem.__file__)))


def python_env(base=None, **extra):
    """os.environ (or base) with bindthem's folder first on PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([BINDTHEM_PATH] + rest)
    env.update(extra)
    return env
