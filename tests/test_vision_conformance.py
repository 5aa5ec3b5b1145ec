"""The suite's `vision` family against the reference server serving the VLM fixture
(``fixtures/models/qwen2-vl-tiny``): every vision feature PASSes there, while the default
text-only run reports the family UNSUPPORTED (and the text-only refusal in `chat`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _conformance_run import GOLDENS_MODE

ROOT = Path(__file__).resolve().parents[1]
VLM = ROOT / "fixtures" / "models" / "qwen2-vl-tiny"


def test_vision_family_passes_on_the_vlm_fixture(tmp_path: Path) -> None:
    report = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "server"), str(ROOT / "conformance"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "mlxcel_conformance.plugin",
         "--pyargs", "mlxcel_conformance.tests.test_vision", "--server-model", str(VLM),
         "--goldens", GOLDENS_MODE, "--report", str(report)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    records = json.loads((report / "conformance.json").read_text())["records"]
    verdicts = {(r["family"], r["feature"]): r["verdict"] for r in records}
    assert verdicts[("vision", "vision.pixels_reach_model")] == "PASS"
    assert verdicts[("vision", "vision.families_agree")] == "PASS"
    assert verdicts[("vision", "vision.local_path_refused")] == "PASS"
    assert verdicts[("vision", "vision.local_video_refused")] == "PASS"
    # The vision goldens replay (exactly, on the CPU) on the fixture they were recorded on.
    goldens = {f: v for (family, f), v in verdicts.items() if f.startswith("golden.vision.")}
    assert goldens == {f"golden.vision.{case}": "PASS" for case in (
        "chat_image_url", "chat_image_url_stream", "responses_input_image", "anthropic_image")}
