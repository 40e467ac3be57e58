"""The fuzz harnesses (tests/fuzz/) without libFuzzer: built with gcc, ASan
and UBSan and standalone.c's main(), they replay the seed corpora, the
regression files in tests/data/fuzz/HARNESS/ (inputs that once crashed or
blew up) and, for the ELF reader, every truncation and many corruptions of
a real shared object. tests/fuzz/run.sh does the fuzzing itself (CI runs it
for a minute; README.rst has the long run)."""

import os
import random
import shutil
import struct
import subprocess

import pytest

import c_drivers
from c_drivers import ROOT

DATA = os.path.join(ROOT, "tests", "data")
HARNESSES = ("fuzz_header", "fuzz_yaml", "fuzz_mangle", "fuzz_elf")
SEEDS = {
    "fuzz_header": ("headers", "bad_headers", "kernels", "cuda", "mangle"),
    "fuzz_mangle": ("headers", "bad_headers", "kernels", "cuda", "mangle"),
    "fuzz_yaml": ("yaml", "bad_yaml", "headers", "kernels", "cuda"),
    "fuzz_elf": (),
}


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory):
    if not shutil.which(c_drivers.CC) or not c_drivers.have_sanitizers():
        pytest.skip("needs %s with ASan" % c_drivers.CC)
    out = tmp_path_factory.mktemp("fuzz")
    r = subprocess.run(["sh", os.path.join(ROOT, "tests", "fuzz", "build.sh"), "standalone"],
                       capture_output=True, text=True, env=dict(os.environ, OUT=str(out)),
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return {h: str(out / h) for h in HARNESSES}


def replay(exe, *paths):
    r = subprocess.run([exe] + [str(p) for p in paths], capture_output=True, text=True,
                       env=c_drivers.env(), timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Sanitizer" not in out and "runtime error" not in out, out[-4000:]
    return int(r.stdout.split()[1])


@pytest.mark.parametrize("name", HARNESSES)
def test_replay_seeds_and_regressions(harnesses, name):
    dirs = [os.path.join(DATA, d) for d in SEEDS[name] + ("fuzz/" + name,)]
    dirs = [d for d in dirs if os.path.isdir(d)]
    if not dirs:
        pytest.skip("no inputs for %s" % name)
    assert replay(harnesses[name], *dirs) > 0


def test_regression_files_exist():
    for name in ("fuzz_header", "fuzz_yaml"):
        assert os.listdir(os.path.join(DATA, "fuzz", name)), name


def section_headers(data):
    """(e_shoff, e_shentsize, e_shnum) of a 64-bit ELF file."""
    return struct.unpack_from("<QHH", data, 0x28)[0], *struct.unpack_from("<HH", data, 0x3A)


def test_elf_reader_on_truncated_and_corrupted_files(harnesses, tmp_path):
    so = tmp_path / "k.so"
    subprocess.run([c_drivers.CC, "-shared", "-fPIC", "-Os", "-o", str(so),
                    os.path.join(DATA, "kernels", "ckernels.c")], check=True)
    data = so.read_bytes()
    shoff, shentsize, shnum = section_headers(data)
    assert shentsize == 64 and shoff + shnum * 64 <= len(data)
    cases = tmp_path / "cases"
    cases.mkdir()
    # every truncation in the headers, then every 7th byte
    for n in list(range(0, 128)) + list(range(128, len(data), 7)):
        (cases / ("trunc%06d" % n)).write_bytes(data[:n])
    rng = random.Random(17)
    for i in range(600):
        b = bytearray(data)
        if i % 3 == 0:  # a field of a section header
            off = shoff + rng.randrange(shnum) * 64 + rng.choice((4, 8, 24, 32, 40, 56))
        elif i % 3 == 1:  # a field of the ELF header
            off = rng.choice((0x28, 0x3A, 0x3C, 0x3E))
        else:  # anywhere
            off = rng.randrange(len(b) - 8)
        b[off:off + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8,
                                     struct.pack("<Q", rng.randrange(1 << 64)),
                                     struct.pack("<Q", len(data) - rng.randrange(64))])
        (cases / ("bad%04d" % i)).write_bytes(bytes(b))
    for shentsize in (0, 1, 40, 63, 65, 0xFFFF):  # e_shentsize was trusted
        b = bytearray(data)
        struct.pack_into("<H", b, 0x3A, shentsize)
        (cases / ("shentsize%d" % shentsize)).write_bytes(bytes(b))
    assert replay(harnesses["fuzz_elf"], cases, so) > 1000
