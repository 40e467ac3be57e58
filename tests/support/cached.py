"""The tests' cache outside the repository, kept between runs
(``$BINDTHEM_TEST_CACHE``, default ``~/.cache/bindthem-tests``): what is fetched
or made once and reused (Debian roots, pyamg's sdist, mypy's caches). Imports
nothing beyond the standard library: benchmarks/ reads it too."""

import hashlib
import os
import sys


def cache_folder(*parts):
    """The folder ``parts`` of the tests' cache (made if missing)."""
    root = os.environ.get("BINDTHEM_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "bindthem-tests")
    path = os.path.join(root, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def mypy_cache(name):
    """mypy's --cache-dir for one check, kept between runs (what it read of
    typeshed and NumPy's stubs is read once: a cold mypy takes ~10 s of CPU);
    one per check and interpreter (sys.prefix), so that no two mypy processes
    share one. mypy re-checks what changed, by hash."""
    tag = hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]
    return cache_folder("mypy", "%d.%d-%s" % (sys.version_info[0], sys.version_info[1], tag), name)
