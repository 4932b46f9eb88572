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
        m.pop("seconds")  # wall time: allowed to differ
    for step in ("read_seconds", "vocabulary_seconds"):  # what loading a checkpoint's table took: wall time too
        data["memory"]["resident"].get("load", {}).pop(step, None)
    # The plans differ by design: a task on a worker, or a torch device, plans one thread; the rest is equal.
    data["memory"].pop("plans")
    # So does the table's bfloat16 copy where the bf16 screen runs: cached in the process (V x D x 2 bytes),
    # rounded a block of rows at a time by the cluster's tasks (none resident). Kept apart, checked by the test.
    resident = data["memory"]["resident"]
    data["bf16"] = resident.pop("bf16"), resident.pop("total") - resident.get("table", 0)
    return data


@pytest.mark.data
@pytest.mark.slow
def test_hubs_on_minilm_through_the_scheduler_matches_the_process(local_cluster, capsys):
    argv = ("--model", "minilm", "--queries", "200")
    there = hubs_json(capsys, *argv, "--scheduler", local_cluster.scheduler_address)
    here = hubs_json(capsys, *argv)
    bf16_there, bf16_here = there.pop("bf16"), here.pop("bf16")
    assert there == here
    assert bf16_there[0] == 0 and bf16_here[0] in (0, 30522 * 384 * 2)  # the process's copy, where bf16 ran
    assert bf16_here[1] - bf16_there[1] == bf16_here[0]  # the only difference in the resident total
    assert there["n_queries"] == 200 and there["metrics"]["dot"]["top"]


@pytest.mark.slow  # waits out the client's 10 s timeout
def test_an_unreachable_scheduler_is_one_line_naming_it(capsys):
    # Nothing listens on port 9 (discard) here: the client gives up after its timeout.
    assert cli.main(["hubs", "--queries", "5", "--scheduler", "tcp://127.0.0.1:9"]) != 0
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 10 s" in err
    assert err.count("10 s") == 1  # the timeout, said once
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["hubs"], ["graph", "--out", "g.parquet"]])
def test_a_malformed_scheduler_address_is_one_line_and_no_client(command, tmp_path, capsys, monkeypatch):
    import distributed

    class NoClient:  # no __del__ to run: a test of the address check alone
        def __init__(self, *args, **kwargs):
            raise AssertionError("a Client was made for a malformed address")

    monkeypatch.setattr(distributed, "Client", NoClient)
    monkeypatch.chdir(tmp_path)
    assert cli.main([*command, "--k", "2", "--scheduler", "nonsense"]) == 1
    err = capsys.readouterr().err
    assert "--scheduler 'nonsense': expected an address such as tcp://host:8786" in err
    assert "missing port number in address 'nonsense'" in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())


def test_a_gpu_torch_does_not_see_is_a_runtime_error(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert cli.main(["neighbors", "3", "--device", "cuda:0"]) == 1
    err = capsys.readouterr().err
    assert "--device 'cuda:0'" in err and err.count("\n") == 1
    if torch.version.cuda is None:
        assert "(a CPU-only build)" in err


def test_an_unknown_device_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exit_:  # a usage error: no table has such a device
        cli.main(["neighbors", "3", "--device", "tpu"])
    assert exit_.value.code == 2
    assert "argument --device: expected cpu, cuda or cuda:N, got 'tpu'" in capsys.readouterr().err


@pytest.mark.torch
def test_device_cpu_prints_what_numpy_prints(capsys):
    pytest.importorskip("torch")
    assert hubs_json(capsys, "--queries", "60", "--k", "4", "--device", "cpu") == hubs_json(capsys, "--queries", "60",
                                                                                          "--k", "4")
    for argv in (["neighbors", "3", "77", "--k", "6", "--json"], ["neighbors", "3", "--by", "dot", "--json"]):
        assert cli.main([*argv, "--device", "cpu"]) == 0
        on_torch = json.loads(capsys.readouterr().out)
        assert cli.main(argv) == 0
        on_numpy = json.loads(capsys.readouterr().out)
        # The plans differ by design, as hubs' do: the one shown is the one followed (the torch screen, one thread).
        plans = on_torch["memory"].pop("plans")
        assert {(p["screen"], p["workers"]) for p in plans.values()} == {("float", 1)}
        on_numpy["memory"].pop("plans")
        assert on_torch == on_numpy
