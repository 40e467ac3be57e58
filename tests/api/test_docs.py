"""The documentation site (docs/): it builds with every warning an error and
every cross-reference resolved, every ``>>>`` example on it runs, every
anchor an error message points at exists, and (slow) the built pages render
in headless Chromium with their navigation, code blocks and working local
links.

The build runs ``python -m sphinx`` in a subprocess against the bindthem that
this interpreter imports (the in-place build with PYTHONPATH, or the
installed one); the examples run from the repository root with a private
build cache (docs/conf.py). Sphinx and furo come with the ``test`` extra.
"""

import ast
import html.parser
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest

from sources import ROOT
from support import python_env

import bindthem
from bindthem import InstantiateError

DOCS = os.path.join(ROOT, "docs")

try:
    import furo  # noqa: F401
    import sphinx  # noqa: F401
    HAVE_SPHINX = True
except ImportError:
    HAVE_SPHINX = False
needs_sphinx = pytest.mark.skipif(not HAVE_SPHINX, reason="needs sphinx and furo (pip install "
                                  "'.[test]' installs both)")


def sphinx_build(builder, out, cache_dir):
    env = dict(os.environ, BINDTHEM_CACHE=str(cache_dir))
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                           "-b", builder, "-d", str(out / ".doctrees"), DOCS, str(out)],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built HTML site's folder."""
    if not HAVE_SPHINX:
        pytest.skip("needs sphinx and furo (pip install '.[test]' installs both)")
    out = tmp_path_factory.mktemp("html")
    r = sphinx_build("html", out, tmp_path_factory.mktemp("cache"))
    assert r.returncode == 0, "the site does not build cleanly:\n" + r.stdout + r.stderr
    return out


@needs_sphinx
def test_site_builds_without_warnings(site):
    for page in ("index", "installing", "tutorial", "dialect", "calls", "build", "notebooks",
                 "dask", "stubs", "packages", "cuda", "cuda-streams", "api", "errors", "hostile",
                 "performance", "internals", "examples", "changelog"):
        assert (site / (page + ".html")).is_file(), page


@needs_sphinx
def test_every_example_runs(tmp_path):
    r = sphinx_build("doctest", tmp_path / "doctest", tmp_path / "cache")
    report = (tmp_path / "doctest" / "output.txt")
    text = report.read_text() if report.exists() else ""
    assert r.returncode == 0, "doctest failures:\n" + text + r.stdout + r.stderr
    m = re.search(r"^\s+(\d+) tests\n\s+0 failures in tests$", text, re.M)
    assert m and int(m.group(1)) >= 20, text   # the examples ran (not an empty build)


def test_examples_not_run_are_marked_and_listed():
    """A Python example the doctests do not run is a ``python`` code block
    whose caption says so, on a page docs/examples.rst lists."""
    with open(os.path.join(DOCS, "examples.rst"), encoding="utf-8") as f:
        listed = set(re.findall(r":doc:`(\w+)`", f.read()))
    for name in sorted(os.listdir(DOCS)):
        if not name.endswith(".rst"):
            continue
        with open(os.path.join(DOCS, name), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^\.\. code-block:: python\n((?:   :.*\n)*)", text, re.M):
            assert "   :caption: Not run by the doctests" in m.group(1), (name, m.group(0))
            assert name[:-4] in listed, "%s has an example not run; list it in examples.rst" % name


def _downloads():
    """docs/conf.py's DOWNLOADS: the files the pages' examples read."""
    with open(os.path.join(DOCS, "conf.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["DOWNLOADS"]]
    return ast.literal_eval(value)


def test_tutorial_runs_as_pasted_by_a_newcomer(tmp_path):
    """The tutorial as a newcomer follows it: the files it links for download
    in an empty folder, a fresh Python started there, every block pasted in
    order (``python -m doctest``: no setup, nothing imported for it)."""
    with open(os.path.join(DOCS, "tutorial.rst"), encoding="utf-8") as f:
        linked = re.findall(r":download:`[^`<]*<\.\./([^>]+)>`", f.read())
    assert sorted(linked) == sorted(_downloads()), linked
    folder = tmp_path / "newcomer"
    folder.mkdir()
    for path in linked:
        shutil.copy(os.path.join(ROOT, path), folder)
    r = subprocess.run([sys.executable, "-m", "doctest", "-v", "-o", "ELLIPSIS",
                        os.path.join(DOCS, "tutorial.rst")], cwd=str(folder),
                       capture_output=True, text=True, timeout=300,
                       env=python_env(BINDTHEM_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    m = re.search(r"^(\d+) passed and 0 failed\.$", r.stdout, re.M)
    assert m and int(m.group(1)) >= 25, r.stdout[-2000:]  # every example ran


def test_readme_quickstart_runs(tmp_path):
    """README.rst's Quickstart, as written: a Python started in examples/."""
    readme = os.path.join(ROOT, "README.rst")
    code = ("import doctest, sys\n"
            "r = doctest.testfile(%r, module_relative=False, optionflags=doctest.ELLIPSIS)\n"
            "print(r.attempted, r.failed)\n"
            "sys.exit(1 if r.failed or r.attempted < 7 else 0)\n" % readme)
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(ROOT, "examples"),
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, BINDTHEM_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout + r.stderr


class _Prose(html.parser.HTMLParser):
    """A page's text outside code (``<pre>``, ``<code>``, scripts, styles) and
    its links."""

    SKIP = {"pre", "code", "script", "style", "textarea"}

    def __init__(self):
        super().__init__()
        self.depth, self.text, self.links = 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth += 1
        if tag == "a" and dict(attrs).get("href"):
            self.links.append(dict(attrs)["href"])

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.text.append(data)


@needs_sphinx
def test_no_markup_shows_and_no_local_link_is_broken(site):
    """What -W does not catch: reST markup that did not apply shows as written
    (``literal`` inside **bold**, `` * `` with its spaces) and a word that
    looks like a URI (file:line:col) becomes a link to nowhere. Every page's
    prose is read for markup characters, and every link that is not to the web
    must name a file of the site (and an anchor in it)."""
    found = []
    for page in sorted(site.glob("*.html")):
        prose = _Prose()
        prose.feed(page.read_text(encoding="utf-8"))
        text = " ".join(prose.text)
        for m in re.finditer(r"``|\*\*\w|\w\*\*(?!\w)|(?<![\w`])`\w[^`]*`(?!\w)", text):
            found.append("%s: %r" % (page.name, text[max(0, m.start() - 30):m.end() + 30]))
        for href in prose.links:
            url = urllib.parse.urlsplit(href)
            if url.scheme in ("http", "https", "mailto"):
                continue
            if url.scheme or url.netloc:
                found.append("%s: a link to %r" % (page.name, href))
                continue
            target = (page.parent / url.path).resolve() if url.path else page
            if not target.is_file():
                found.append("%s: a link to %r, no such file" % (page.name, href))
            elif url.fragment and target.suffix == ".html" and \
                    url.fragment not in anchors_of(target):
                found.append("%s: a link to %r, no such anchor" % (page.name, href))
    assert found == [], "\n".join(found)


# --- the anchors error messages point at ------------------------------------

def anchors_of(html_file):
    with open(html_file, encoding="utf-8") as f:
        return set(re.findall(r'\bid="([^"]+)"', f.read()))


@needs_sphinx
def test_every_anchor_in_the_table_exists(site):
    table = bindthem._core.DOC_ANCHORS
    assert set(table) == {"sizes", "templates", "unbindable", "yaml-types"}
    for rule, where in table.items():
        page, _, anchor = where.partition("#")
        assert page.startswith("docs/") and page.endswith(".rst"), where
        html_file = site / (page[len("docs/"):-len(".rst")] + ".html")
        assert html_file.is_file(), where
        assert anchor in anchors_of(html_file), "%s: no #%s in %s" % (rule, anchor, html_file)


def tail(rule):
    return " (see %s)" % bindthem._core.DOC_ANCHORS[rule]


def test_messages_end_with_their_rule(tmp_path):
    h = tmp_path / "k.h"
    h.write_text("void fill(double *x, double v) { *x = v; }\n"
                 "template <class T> T twice(const T a) { return a + a; }\n"
                 "template <class S> long f(const double x[], const S x_size) { return 0; }\n"
                 "void byref(double **x) {}\n")

    def error_of(yml):
        y = tmp_path / "k.yml"
        y.write_text(yml)
        with pytest.raises(InstantiateError) as e:
            bindthem.parse_header(str(h), str(y))
        return str(e.value)

    assert error_of("- {types: [[real]], functions: [twice]}\n").endswith(tail("yaml-types"))
    assert error_of("- {types: [[1.5]], functions: [twice]}\n").endswith(tail("yaml-types"))
    assert error_of("- {types: [[double]], functions: [f]}\n").endswith(tail("sizes"))
    assert error_of("- {types: [null], functions: [fill]}\n").endswith(
        "pointer with no 'x_size' after it" + tail("sizes"))
    assert error_of("- {types: [null], functions: [byref]}\n").endswith(tail("unbindable"))

    from bindthem._services.binding import nothing_bound
    t = tmp_path / "t.h"
    t.write_text("template <class T> T twice(const T a) { return a + a; }\n")
    assert nothing_bound(bindthem.parse_header(str(t))).endswith(tail("templates"))


# --- the built pages, as a reader's browser shows them ----------------------

class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("href", "src") and v:
                self.urls.append(v)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (headless Chromium over the built site)")
@needs_sphinx
@pytest.mark.parametrize("page", ["index", "tutorial"])
def test_pages_render_in_chromium(site, page, tmp_path):
    browser = chromium()
    if not browser:
        pytest.skip("needs Debian's chromium (apt-get install chromium; .ci/run installs it)")
    url = (site / (page + ".html")).as_uri()
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--user-data-dir=%s" % (tmp_path / "profile"), "--dump-dom", url],
                       capture_output=True, text=True, timeout=60)
    dom = r.stdout
    assert r.returncode == 0 and "</html>" in dom, r.stderr[-2000:]
    # the navigation: furo's sidebar with every page of the site
    assert 'class="sidebar-tree"' in dom
    for linked in {"installing.html", "tutorial.html", "dialect.html", "api.html"} - {
            page + ".html"}:
        assert 'href="%s' % linked in dom, linked
    # code blocks, highlighted
    assert dom.count('class="highlight"') >= (3 if page == "tutorial" else 0)
    if page == "tutorial":
        assert "highlight-pycon" in dom and "highlight-cpp" in dom
    # every local link, stylesheet and script resolves, anchors included
    parser = Links()
    parser.feed(dom)
    local = [u for u in parser.urls if not urllib.parse.urlparse(u).scheme
             or urllib.parse.urlparse(u).scheme == "file"]
    assert len(local) > 20
    broken = []
    for u in local:
        parts = urllib.parse.urlparse(u)
        target = (site / page).parent / urllib.parse.unquote(parts.path) if parts.path \
            else site / (page + ".html")
        if parts.scheme == "file":
            target = type(site)(urllib.parse.unquote(parts.path))
        if not target.exists():
            broken.append(u)
        elif parts.fragment and target.suffix == ".html" and \
                parts.fragment not in anchors_of(target):
            broken.append(u)
    assert not broken, broken
