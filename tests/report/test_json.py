"""The one JSON path: every command's result has ``to_dict()``, and ``formats.to_json`` writes it.

Oracles: hand arithmetic (V=512, D=64: V*D = 32,768 parameters, 4 bytes each in fp32) and the
JSON module itself; the byte-for-byte agreement of the command outputs is in the CLI tests.
"""

from __future__ import annotations

import json

import pytest

from embedlab.measure import demo, encode, hubs, lab, neighbors, params, positions
from embedlab.report import formats, views


@pytest.mark.parametrize("cls", [
    neighbors.NeighborsResult, hubs.HubsResult, encode.Encoding, positions.PositionComparison, demo.DemoResult,
    params.Count, params.Growth, params.Breakdown, params.ParamsResult, lab.LabResult,
])
def test_every_result_class_has_to_dict(cls):
    assert callable(getattr(cls, "to_dict", None))


def test_views_build_no_dicts_of_their_own():
    builders = [name for name in dir(views) if name.endswith(("_dict", "_json"))]
    assert builders == []


def test_params_result_to_dict_by_hand():
    count = params.from_numbers(512, 64)
    data = params.ParamsResult(count, params.growth(count.breakdown, growth_factor=2)).to_dict()
    assert (data["V"], data["D"], data["tied"], data["source"]) == (512, 64, True, "numbers")
    assert data["params"]["token"] == data["params"]["total"] == 512 * 64 and data["params"]["head"] == 0
    assert data["bytes"]["token"] == 512 * 64 * 4 and data["share"] == 1.0
    grown = data["growth"]
    assert (grown["factor"], grown["V"], grown["bigger_V"]) == (2, 512, 1024)
    assert grown["tied"]["bigger"]["params"]["total"] == 1024 * 64
    assert grown["untied"]["now"]["params"]["total"] == 2 * 512 * 64
    assert grown["untied"]["added"] == 2 * 512 * 64 and grown["untied"]["added_bytes"] == 2 * 512 * 64 * 4
    assert grown["saved"] == 512 * 64 and grown["bigger_saved"] == 1024 * 64
    assert list(data)[-1] == "growth"
    assert json.loads(formats.to_json(params.ParamsResult(count, params.growth(count.breakdown, growth_factor=2)))) == data


def test_lab_result_to_dict_is_the_report_object():
    from embedlab import embed

    result = lab.measure(lab.ReferenceBackend(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)),
                         lab.LabSettings(probe=137), seed=embed.SEED)
    data = result.to_dict()
    assert tuple(data) == lab.REPORT_KEYS  # the seed table: no tokens, no source
    assert data["params"] == embed.VOCAB * embed.DIM and data["untied_params"] == 2 * embed.VOCAB * embed.DIM
    assert data["cos_neighbors"] == embed.nearest_by_cosine(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED), 137, 5)


def test_to_json_writes_tokens_unescaped_with_a_newline_at_the_end():
    class Result:
        def to_dict(self):
            return {"token": "王", "n": 1}

    assert formats.to_json(Result()) == '{\n  "token": "王",\n  "n": 1\n}\n'
