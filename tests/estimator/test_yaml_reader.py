"""The event-stream YAML reader builds exactly what PyYAML's safe loader builds, for the
plain data a topology file holds (a 100k-operator file took 17 s through the node graph)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.errors import ModelError
from estimator.loaders import parse_document

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["yes", "off", "0x1f", "1_000", "1e3", ".inf", "~", "2026-11-22", "0o17"])
)
keys = st.text(max_size=8) | st.integers(-5, 5) | st.booleans()
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(document=documents, flow=st.sampled_from([None, True, False]))
def test_reader_equals_the_safe_loader(document: object, flow: bool | None) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow, allow_unicode=True)
    assert parse_document(text, fmt="yaml", where="t") == yaml.safe_load(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2.5, -3e-2, .nan]\nc: {x: yes, y: ~, z: '007'}\n",
        "n: 0x1F\no: 0o17\nbig: 1_000\nd: 2026-11-22\nt: 2026-11-22 03:00:00\n",
        'plain: text, with a comma\nquoted: "1.0"\nmulti: |\n  two\n  lines\n',
        "&anchor a: 1\nb: &other [1, 2]\n",  # anchors without aliases are plain data
        "!!str 12: !!int '7'\nx: !!float 3\n",
    ],
)
def test_written_yaml_features_read_as_the_safe_loader_reads_them(text: str) -> None:
    got = parse_document(text, fmt="yaml", where="t")
    want = yaml.safe_load(text)
    if isinstance(want.get("b"), list) and any(v != v for v in want["b"] if isinstance(v, float)):
        assert repr(got) == repr(want)  # NaN != NaN
    else:
        assert got == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1]\nb: *x\n", "aliases"),
        ("a: !!python/object:os.system ls\n", "tag"),
        ("a: !!binary aGk=\n", "tag"),
        ("? [1, 2]\n: v\n", "mapping key"),
        ("a: [1, 2\n", "not valid YAML"),
    ],
)
def test_what_the_reader_refuses_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_document(text, fmt="yaml", where="topology.yaml")


@pytest.mark.parametrize(
    "text",
    ["!!python/object/apply:os.system ['echo unsafe']\n", "a: !!set {x, y}\n", "!!omap [a: 1]\n"],
)
def test_tags_on_collections_beyond_plain_data_are_refused(text: str) -> None:
    with pytest.raises(ModelError, match="tag"):
        parse_document(text, fmt="yaml", where="topology.yaml")
