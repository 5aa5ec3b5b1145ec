"""Tests for the peers run: golden diff blocks, the GGUF converter, the published pages, and a
peer that dies mid-run (FAIL rows with its log, and the run goes on)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mlxcel_conformance.golden_diff import format_case, parse_line
from mlxcel_conformance.peers import pages
from mlxcel_conformance.peers.launchers import Peer, PeerProcess
from mlxcel_conformance.peers.run import check_peer
from mlxcel_conformance.report import Record, Report, Verdict
from mlxcel_conformance.report_html import anchor

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"


@pytest.mark.parametrize(
    ("line", "path", "expected", "got"),
    [
        ("status: expected 400, got 404", "status", "400", "404"),
        ("body.error: expected object, got string (\"x\")", "body.error", "object",
         "string (\"x\")"),
        ("event:finish.choices: missing", "event:finish.choices", "(present)", "(absent)"),
        ("$.a: unexpected (got 3)", "$.a", "(absent)", "3"),
        ("event order: expected ['role', 'done'], got ['done']", "event order",
         "['role', 'done']", "['done']"),
        ("$.x: expected a non-empty list", "$.x", "a non-empty list", "[]"),
    ],
)
def test_diff_lines_split_into_expected_and_got(line: str, path: str, expected: str,
                                                got: str) -> None:
    diff = parse_line(line)
    assert (diff.path, diff.expected, diff.got) == (path, expected, got)


def test_case_block_reads_as_a_diff() -> None:
    block = format_case("chat/hello", "shape", ["status: expected 200, got 500", "odd line"])
    assert block.splitlines() == [
        "golden chat/hello (shape mode): 2 differences",
        "  status", "    - expected: 200", "    + got:      500",
        "  odd line",
    ]


def test_gguf_conversion_of_the_fixture(tmp_path: Path) -> None:
    import gguf

    from mlxcel_conformance.peers.gguf_convert import convert

    reader = gguf.GGUFReader(str(convert(FIXTURE, tmp_path / "m.gguf")))
    fields = {name: field.contents() for name, field in reader.fields.items()
              if name not in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                              "tokenizer.ggml.merges")}
    assert fields["general.architecture"] == "qwen3"
    assert fields["tokenizer.ggml.model"] == "gpt2"
    assert fields["tokenizer.ggml.pre"] == "qwen2"
    assert fields["tokenizer.ggml.add_bos_token"] is False
    assert fields["tokenizer.ggml.eos_token_id"] == 2041
    assert fields["qwen3.rope.dimension_count"] == 16
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    assert len(tokens) == 2048 and tokens[2041] == "<|im_end|>"
    assert types[2041] == int(gguf.TokenType.CONTROL) and types[0] == int(gguf.TokenType.NORMAL)
    names = {t.name for t in reader.tensors}
    assert {"token_embd.weight", "blk.1.attn_q_norm.weight", "output_norm.weight"} <= names
    assert "output.weight" not in names  # tied embeddings: llama.cpp falls back to token_embd


def _doc(name: str, verdicts: dict[str, Verdict]) -> dict[str, object]:
    report = Report(target="http://x", profile=name)
    for feature, verdict in verdicts.items():
        evidence = {"diffs": ["status: expected 400, got 404"], "mode": "shape",
                    "case": f"chat/{feature}"} if verdict is Verdict.FAIL else {}
        report.add(Record("chat", feature, verdict, checks=["golden_transcript"]
                          if evidence else [], message="m", evidence=evidence))
    report.finish()
    return pages.peer_document(report, {"name": name, "description": name, "version": "1"})


def test_comparison_page_links_each_cell_to_the_evidence(tmp_path: Path) -> None:
    pages.write_peer(tmp_path, _doc("mlxcel", {"a": Verdict.PASS, "b": Verdict.PASS}))
    pages.write_peer(tmp_path, _doc("mlx-lm", {"a": Verdict.PASS, "b": Verdict.FAIL,
                                               "c": Verdict.UNSUPPORTED,
                                               "d": Verdict.LENIENT}))
    pages.write_index(tmp_path)
    index = (tmp_path / "index.md").read_text()
    assert "| family | feature | tier | mlxcel | mlx-lm |" in index
    link = f"[FAIL](mlx-lm.md#{anchor('chat', 'b')})"
    assert f"| chat | b | contract | PASS | {link} |" in index
    assert "| chat | c | contract | — | [UNSUPPORTED]" in index
    assert f"| chat | d | contract | — | [LENIENT](mlx-lm.md#{anchor('chat', 'd')}) |" in index
    # UNSUPPORTED, LENIENT and INCONCLUSIVE counted apart, none of them a FAIL
    assert "| mlx-lm | `mlx-lm` | 1 | 1 | 0 | 0 | 1 | 1 | 0 | 0 of 1 |" in index
    # the precision table: per peer, FAILs per tier, and how many cite their source
    assert "| mlx-lm | `mlx-lm` | 1 |" in index and "0 of 1 |" in index
    # distinct defects link to the page's list, which only a page with defects has
    assert "0 of 1 | [1](mlx-lm.md#distinct-defects) |" in index
    assert "0 of 0 | 0 |" in index
    assert '<a id="distinct-defects"></a>' in (tmp_path / "mlx-lm.md").read_text()
    assert "distinct-defects" not in (tmp_path / "mlxcel.md").read_text()
    peer_md = (tmp_path / "mlx-lm.md").read_text()
    assert f'<a id="{anchor("chat", "b")}"></a>' in peer_md
    assert "    - expected: 400\n    + got:      404" in peer_md
    assert f'href="mlx-lm.html#{anchor("chat", "b")}"' in (tmp_path / "index.html").read_text()
    assert f'id="{anchor("chat", "b")}"' in (tmp_path / "mlx-lm.html").read_text()


# A peer that answers /health and /v1/models, then dies on the first generation request.
DYING_PEER = """
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model",
                           "created": 0, "owned_by": "x"}]} if "models" in self.path
                          else {"status": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        print("dying on", self.path, flush=True)  # the golden replay POSTs first
        os._exit(3)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_a_peer_dying_mid_run_yields_fail_rows_with_its_log(tmp_path: Path) -> None:
    script = tmp_path / "dying_peer.py"
    script.write_text(DYING_PEER)
    peer = Peer("dying", "mlx-lm", "a server that exits on its first POST",
                lambda _peer, port, _model: [sys.executable, str(script), str(port)],
                model_dir=tmp_path, startup_timeout=30.0)
    out = tmp_path / "out"
    doc = check_peer(peer, out, tmp_path / "work", deadline_s=120.0, request_timeout_s=10.0,
                     extra=["-k", "models or chat/hello or count_stream"])
    records = {(r["family"], r["feature"]): r for r in doc["records"]}
    crash = records[("health", "peer.process_alive")]
    assert crash["verdict"] == "FAIL" and crash["evidence"]["exit_code"] == 3
    assert "dying on /v1/" in crash["evidence"]["log_tail"]
    after = [r for r in records.values() if "transport_error" in r["evidence"]]
    assert len(after) >= 2, "every request after the crash is a FAIL, and the run went on"
    assert all(r["verdict"] == "FAIL" and r["evidence"]["peer_exit_code"] == 3 for r in after)
    saved = json.loads((out / "dying.json").read_text())
    assert saved["peer"]["name"] == "dying"
    assert not PeerProcess(peer, tmp_path / "work").alive()


def test_bench_hook_runs_the_command_once_per_started_peer(tmp_path: Path) -> None:
    from mlxcel_conformance.peers.bench_hook import run_benchmarks, run_benchmarks_on

    peer = Peer("p", "mlx-lm", "", lambda _peer, _port, _model: [], model_dir=tmp_path)
    started = PeerProcess(peer, tmp_path / "p")
    writer = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
    command = f'{sys.executable} -c "{writer}" {{out}}/{{name}}.txt {{url}}'
    assert run_benchmarks_on([started], command, tmp_path) == {"p": 0}
    assert (tmp_path / "p.txt").read_text() == started.base_url
    assert run_benchmarks([peer], tmp_path, tmp_path, None) is None


def test_published_pages_name_no_work_directory(tmp_path: Path) -> None:
    from mlxcel_conformance.peers.run import without_workdir

    work = tmp_path / "mlxcel-peers-x"
    doc = _doc("llama-server", {"a": Verdict.PASS})
    doc["records"][0]["evidence"] = {"model": f"{work}/llama-server/qwen3-tiny.gguf"}
    clean = without_workdir(doc, work)
    assert clean["records"][0]["evidence"]["model"] == "<workdir>/llama-server/qwen3-tiny.gguf"
    assert str(work) not in json.dumps(clean)
    gguf = tmp_path / "cache" / "m.Q4_1.gguf"
    doc["records"][0]["evidence"] = {"model": str(gguf)}
    assert without_workdir(doc, work, gguf)["records"][0]["evidence"]["model"] == "<m.Q4_1.gguf>"
