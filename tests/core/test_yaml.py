"""instantiate.yml's errors (csrc/core/bt_yaml.c), through
bindthem.parse_header: the tests/data/bad_yaml corpus (EXPECTED.txt, the
table the C drivers check too), malformed YAML at libyaml's location, and an
unknown type named by its entry's path."""

import os

import pytest

from sources import DATA
from support import SCALE_ROWS_H as HDR
from support import check_located as check
from support import instantiate_error
from support import read_table as _table
from support import write_file as _write

from bindthem import InstantiateError

BAD_Y = os.path.join(DATA, "bad_yaml")
BAD_YAML = _table(os.path.join(BAD_Y, "EXPECTED.txt"), 4)


@pytest.mark.parametrize("yml,hdr,pos,msg", BAD_YAML, ids=[r[0] for r in BAD_YAML])
def test_bad_yaml(yml, hdr, pos, msg):
    words = hdr.split()
    # a YAML-only error shows with any good header
    header = os.path.join(BAD_Y, words[0] if words[0] != "-" else "arity.h")
    path = os.path.join(BAD_Y, yml)
    e = instantiate_error(header, path, strict="--strict" in words)
    check(e, InstantiateError, path, pos, msg)


def test_unknown_type_names_the_entry_path(tmp_path):
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", "instantiate:\n- types: null\n  functions: [by_ref]\n"
                                  "- types:\n    - [int, doubel]\n  functions:\n"
                                  "    - scale_rows\n")
    e = instantiate_error(h, y)
    assert (e.lineno, e.colno) == (5, 13)
    assert "unknown type 'doubel' in instantiate[1].types[0]" in str(e)


@pytest.mark.parametrize("text,pos,msg", [
    ("- types: [[int]\n  functions: [f]\n", "2:3", "did not find expected ',' or ']'"),
    ("- types:\n    - [int]\n  functions:\n    - f\n  - g\n", "5:3",
     "did not find expected key"),
    ("key: [unclosed\n", "2:1", "did not find expected ',' or ']'"),
    ("- *undefined_alias\n", "1:3", "found undefined alias"),
    ("- types: null\n  functions: [f]\n  types: null\n", "3:3",
     "duplicate key 'types' in entry [0]"),
    ("- &a types\n", "1:3", "entry [0] must be a mapping with 'types' and 'functions' keys"),
])
def test_malformed_yaml(tmp_path, text, pos, msg):
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", text)
    e = instantiate_error(h, y)
    assert str(e).startswith("%s:%s: " % (y, pos)), str(e)
    assert msg in str(e)
