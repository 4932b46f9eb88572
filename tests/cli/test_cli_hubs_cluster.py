"""``embedlab hubs --scheduler``: minilm on a Dask ``LocalCluster`` prints what the in-process run prints."""

from __future__ import annotations

import json

import pytest

from embedlab import cli

pytest.importorskip("distributed")


def hubs_json(capsys, *argv):
    assert cli.main(["hubs", "--json", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    for m in data["metrics"].values():
        m.pop("seconds")  # wall time: the one field allowed to differ
    return data


@pytest.mark.data
def test_hubs_on_minilm_through_the_scheduler_matches_the_process(local_cluster, capsys):
    argv = ("--model", "minilm", "--queries", "200")
    there = hubs_json(capsys, *argv, "--scheduler", local_cluster.scheduler_address)
    here = hubs_json(capsys, *argv)
    assert there == here
    assert there["n_queries"] == 200 and there["metrics"]["dot"]["top"]


def test_an_unreachable_scheduler_is_one_line_naming_it(capsys):
    # Nothing listens on port 9 (discard) here: the client gives up after its timeout.
    assert cli.main(["hubs", "--queries", "5", "--scheduler", "tcp://127.0.0.1:9"]) != 0
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 10 s" in err
    assert len(err.strip().splitlines()) == 1


def test_an_unknown_device_names_the_flag(capsys):
    pytest.importorskip("torch")
    assert cli.main(["neighbors", "3", "--device", "tpu"]) != 0
    assert "--device 'tpu': expected cpu, cuda or cuda:N" in capsys.readouterr().err


@pytest.mark.torch
def test_device_cpu_prints_what_numpy_prints(capsys):
    pytest.importorskip("torch")
    assert hubs_json(capsys, "--queries", "60", "--k", "4", "--device", "cpu") == hubs_json(capsys, "--queries", "60",
                                                                                          "--k", "4")
    for argv in (["neighbors", "3", "77", "--k", "6", "--json"], ["neighbors", "3", "--by", "dot", "--json"]):
        assert cli.main([*argv, "--device", "cpu"]) == 0
        on_torch = json.loads(capsys.readouterr().out)
        assert cli.main(argv) == 0
        assert on_torch == json.loads(capsys.readouterr().out)
