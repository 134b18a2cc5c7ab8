"""AUG-PE (`generator=augpe`): accounting, the vote mechanism, selection, noise source, LM backends, conformance."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from synbench.core import registry
from synbench.core.base import ChatRequest, Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, SynBenchError
from synbench.core.privacy import DELTA_RULES, NoiseSource, PrivacySpec, gaussian_sigma
from synbench.dp.label_sets import LabelSetOptions
from synbench.generators.augpe import AugPEGenerator, evolution
from synbench.lm.backends import LocalBackend, make_backend
from synbench.lm.prompts import load_prompts
from synbench.testing import check_generator
from tests.conftest import compose_config, run_cli


class HashEncoder:
    """A tiny deterministic encoder: hashed bag of words, L2-normalised (no model)."""

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class TopicEncoder:
    """One-hot of the first integer in a text (16 topics): 'doc 3 ...' and 'doc 3 v' embed identically."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            found = re.search(r"\d+", text)
            out[i, int(found.group()) % 16 if found else 15] = 1.0
        return out


class TopicLM:
    """RANDOM_API writes 'doc 0', 'doc 1', ...; a variation keeps its parent's number."""

    name = "topic-lm"

    def __init__(self) -> None:
        self.counter = 0

    def complete(self, requests: Sequence[ChatRequest], **_: Any) -> list[str]:
        out = []
        for r in requests:
            parent = re.search(r"doc (\d+)", r.user)
            if parent:
                out.append(f"doc {parent.group(1)} v")
            else:
                out.append(f"doc {self.counter % 16}")
                self.counter += 1
        return out


def corpus(texts: list[str], labels: list[str], space: tuple[str, ...] = ("a", "b")) -> Corpus:
    return Corpus.build(texts, [[label] for label in labels], space, name="private")


# ----- accounting ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,paper", [(0.5, 20.98), (1.0, 11.19), (2.0, 6.01), (4.0, 3.28)])
def test_paper_psytar_sigma_at_t10(eps: float, paper: float) -> None:
    delta = DELTA_RULES["1/(N ln N)"](5102)
    budget = evolution.calibrate(eps, delta, 10, None, multi_label=True, label_mu_share=None)
    assert budget.sigma == pytest.approx(paper, abs=0.01)
    assert budget.sigma == gaussian_sigma(eps, delta, 10)
    assert budget.epsilon() == pytest.approx(eps, rel=1e-6) and budget.epsilon() <= eps * (1 + 1e-9)


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("share", [None, 0.1])
def test_votes_and_label_release_compose_within_budget(multi: bool, share: float | None) -> None:
    config, delta = LabelSetOptions(), 1e-5
    budget = evolution.calibrate(2.0, delta, 3, config, multi, share)
    g = config.gaussians(multi)
    assert budget.mechanisms == 3 + g and budget.labels is not None
    assert budget.delta_at == pytest.approx(delta - (0.1 * delta if multi else 0.0))
    assert budget.epsilon() <= 2.0 * (1 + 1e-9) and budget.epsilon() == pytest.approx(2.0, rel=1e-6)
    if share is None:
        assert budget.labels.sigma == budget.sigma == gaussian_sigma(2.0, budget.delta_at, 3 + g)
    else:  # the labels' own sigma: s of mu^2
        assert (g / budget.labels.sigma**2) / budget.mu**2 == pytest.approx(share)
    inf = evolution.calibrate(math.inf, delta, 3, config, multi, None)
    assert inf.sigma == 0 and inf.labels.sigma == 0 and inf.epsilon() == math.inf


# ----- the vote mechanism ---------------------------------------------------------------------------------------


def test_a_vote_has_sensitivity_one() -> None:
    rng = np.random.default_rng(0)
    private, candidates = rng.normal(size=(50, 8)), rng.normal(size=(20, 8))
    private_class = rng.integers(-1, 2, size=50)  # classes 0, 1 and "not a class" (-1: votes over all)
    cand_class = np.repeat([0, 1], 10)
    full = evolution.vote_histogram(private, private_class, candidates, cand_class)
    assert full.sum() == 50
    for i in range(50):  # remove each document: exactly one vote, in one coordinate, goes
        rest = np.delete(np.arange(50), i)
        diff = full - evolution.vote_histogram(private[rest], private_class[rest], candidates, cand_class)
        assert np.abs(diff).sum() == 1 and diff.max() == 1 and np.linalg.norm(diff) == 1
    own = evolution.vote_histogram(private[:1], [1], candidates, cand_class)
    assert own[:10].sum() == 0 and own[10:].sum() == 1  # a document votes inside its own class


def test_rank_and_sample_selection() -> None:
    noisy = np.array([0.0, 10.0, 0.0, 5.0, 3.0, 0.0])
    classes = [0, 0, 0, 0, 1, 1]
    rng = np.random.default_rng(0)
    assert evolution.select(noisy, classes, [2, 1], "rank", rng).tolist() == [1, 3, 4]
    drawn = evolution.select(noisy, classes, [400, 0], "sample", rng)
    assert set(drawn.tolist()) == {1, 3}
    assert abs((drawn == 1).mean() - 10 / 15) < 0.08  # drawn in proportion to the noisy count
    uniform = evolution.select(np.zeros(6), classes, [0, 200], "sample", rng)
    assert set(uniform.tolist()) == {4, 5}
    assert evolution.noisy_histogram(np.array([1.0, 5.0]), 0.0, rng, threshold=2.0).tolist() == [0.0, 3.0]
    with pytest.raises(ConfigError):
        evolution.select(noisy, classes, [1, 1], "top", rng)


def test_blanks_and_target_lengths() -> None:
    rng = np.random.default_rng(0)
    masked = evolution.blank_words("one two three four five six seven eight nine ten", 0.5, rng)
    assert masked.split().count("_") == 5 and len(masked.split()) == 10
    lengths = [evolution.target_words(40, 0.25, rng) for _ in range(200)]
    assert 30 <= min(lengths) and max(lengths) <= 50 and len(set(lengths)) > 5


# ----- the loop ----------------------------------------------------------------------------------------------------


def topic_generator(**kwargs: Any) -> AugPEGenerator:
    defaults = dict(
        encoder=TopicEncoder(),
        backend=TopicLM(),
        iterations=2,
        variations=2,
        population=8,
        variation_kinds={"rephrase": 1.0},
        prompts="default",
    )
    return AugPEGenerator(**{**defaults, **kwargs})


def test_eps_inf_selects_the_candidates_nearest_to_the_private_docs() -> None:
    private = corpus([f"doc {t} private note {i}" for i, t in enumerate([3, 3, 3, 7, 7, 3, 7, 3])], ["a"] * 8)
    gen = topic_generator(label_prior="dp")  # every document in class a: the DP plan puts the population there
    report = gen.fit(private, PrivacySpec(math.inf, 1e-5, "prv"), seed=0)
    assert report.epsilon_spent == math.inf and report.details["sigma"] == 0
    out = gen.sample(2)
    assert sorted(re.search(r"\d+", t).group() for t in out.texts) == ["3", "7"]
    assert out.labels == (("a",), ("a",))


def test_sample_follows_label_counts_and_fills_beyond_the_population() -> None:
    private = corpus([f"doc {i % 4} text" for i in range(12)], ["a", "b"] * 6)
    gen = topic_generator(population=4)
    with pytest.raises(ConfigError):
        gen.sample(3)
    gen.fit(private, PrivacySpec(4.0, 1e-5, "prv"), seed=0)
    out = gen.sample(25, {("a",): 20, ("b",): 5})
    assert len(out) == 25 and out.labels.count(("a",)) == 20 and out.labels.count(("b",)) == 5
    assert gen.sampling_details()["sample_lm_calls"] > 0  # more than the population: variations were written
    repeat = topic_generator(population=4, fill="replace")
    repeat.fit(private, PrivacySpec(4.0, 1e-5, "prv"), seed=0)
    assert len(repeat.sample(30)) == 30 and repeat.sampling_details()["sample_lm_calls"] == 0


def test_noise_comes_from_the_noise_source_not_the_seed() -> None:
    private = corpus([f"doc {i % 16} text {i}" for i in range(64)], ["a", "b"] * 32)

    def weights(noise: NoiseSource) -> list[float]:
        gen = topic_generator(population=8, iterations=1)
        gen.fit(private, PrivacySpec(1.0, 1e-5, noise=noise, accountant="prv"), seed=0)
        return [w for c in gen._state["classes"] for w in gen._state["weights"][c].tolist()]

    assert weights(NoiseSource(seed=5)) == weights(NoiseSource(seed=5))
    assert weights(NoiseSource()) != weights(NoiseSource())


def test_details_hold_no_private_statistic() -> None:
    private = corpus([f"doc {i % 4} text" for i in range(12)], ["a", "b"] * 6)
    gen = topic_generator()
    report = gen.fit(private, PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    assert set(report.details) <= AugPEGenerator.public_details
    assert not {"votes", "counts", "histogram", "distances"} & set(report.details)
    assert report.epsilon_spent <= 2.0 * (1 + 1e-9)


# ----- prompts, config, backends -------------------------------------------------------------------------------


def test_prompts_per_domain_name_the_label() -> None:
    prompts = load_prompts("drugreview")
    user, system = prompts.render("random", ("negative",))
    assert "negative" in user and system
    assert load_prompts("no-such-dataset") == load_prompts("default")
    with pytest.raises(ConfigError):
        load_prompts(
            {"domain": "x", "random": "no label here", "rephrase": "{text}{label}", "fill_blanks": "{masked}{label}"}
        )


def test_config_builds_the_generator() -> None:
    cfg = compose_config(["generator=augpe"])
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(cfg.generator, resolve=True)
    gen = registry.create(Generator, node)
    assert isinstance(gen, AugPEGenerator) and gen.prompts == load_prompts("drugreview_condition6")
    assert gen.iterations >= 1 and dict(gen.backend_node)["_plugin_"] == "local"


class _ChatServer(HTTPServer):
    """An OpenAI-compatible stub on 127.0.0.1 answering at most `limit` requests; it records their bodies."""

    def __init__(self, limit: int, fail_first: int = 0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.limit, self.fail_first, self.bodies, self.headers_seen = limit, fail_first, [], []
        self.timeout = 0.2  # handle_request returns after this long without a request
        self.stop = threading.Event()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        server: _ChatServer = self.server  # type: ignore[assignment]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.bodies.append(body)
        server.headers_seen.append(self.headers.get("Authorization"))
        if len(server.bodies) <= server.fail_first:
            self.send_response(503)
            self.end_headers()
            return
        user = body["messages"][-1]["content"]
        parent = re.search(r"doc (\d+)", user)
        reply = f"doc {parent.group(1)} v" if parent else f"doc {len(server.bodies) % 16}"
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": f'"{reply}"'}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def serve(limit: int, fail_first: int = 0) -> tuple[_ChatServer, threading.Thread]:
    server = _ChatServer(limit, fail_first)

    def loop() -> None:
        # Bounded: it stops by itself after `limit` requests, when told to, or after 30 s.
        deadline = threading.Event()
        timer = threading.Timer(30.0, deadline.set)
        timer.start()
        while len(server.bodies) < server.limit and not server.stop.is_set() and not deadline.is_set():
            server.handle_request()
        timer.cancel()
        server.server_close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return server, thread


def test_openai_backend_against_a_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNBENCH_TEST_KEY", "sk-test")
    server, thread = serve(limit=200, fail_first=1)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    backend = {
        "_plugin_": "openai",
        "base_url": url,
        "model": "stub",
        "api_key_env": "SYNBENCH_TEST_KEY",
        "max_workers": 2,
    }
    api = make_backend(backend)
    assert api.complete([ChatRequest("hi", "sys")], max_new_tokens=5, temperature=1.0, top_p=1.0, seed=3) == [
        '"doc 2"'
    ]  # raw reply
    first = server.bodies[-1]
    assert first["model"] == "stub" and first["max_tokens"] == 5 and first["seed"] == 3
    assert first["messages"][0] == {"role": "system", "content": "sys"} and server.headers_seen[-1] == "Bearer sk-test"
    private = corpus([f"doc {t} private" for t in [1, 1, 2, 5]], ["a"] * 4)
    gen = AugPEGenerator(
        encoder=TopicEncoder(),
        backend=backend,
        iterations=1,
        variations=2,
        population=4,
        variation_kinds={"rephrase": 1.0},
    )
    report = gen.fit(private, PrivacySpec(math.inf, 1e-5, "prv"), seed=0)
    assert report.details["backend"] == "stub" and report.details["lm_calls"] == 8
    assert all("private" not in b["messages"][-1]["content"] for b in server.bodies)  # prompts hold synthetic text only
    assert len(gen.sample(3)) == 3
    with pytest.raises(SynBenchError, match="failed after"):
        make_backend({**backend, "base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "timeout_s": 2}).complete(
            [ChatRequest("x")], max_new_tokens=1, temperature=1.0, top_p=1.0, seed=0
        )
    with pytest.raises(SynBenchError, match="does not take 'api_key'"):  # a key never comes from the config
        make_backend({"_plugin_": "openai", "base_url": url, "model": "m", "api_key": "literal"})
    server.stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_openai_backend_drops_queued_requests_after_a_failure() -> None:
    """One request failing after its retries fails the call at once: the queued ones are never sent."""
    server, thread = serve(limit=20, fail_first=20)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    api = make_backend({"_plugin_": "openai", "base_url": url, "model": "stub", "max_workers": 1, "max_retries": 1})
    with pytest.raises(SynBenchError, match=r"failed after up to 2 attempt\(s\): InternalServerError \(HTTP 503\)"):
        api.complete([ChatRequest(f"q{i}") for i in range(6)], max_new_tokens=1, temperature=1.0, top_p=1.0, seed=0)
    sent = {b["messages"][-1]["content"] for b in server.bodies}  # q0 with its retry, and q1 if already in flight
    assert "q0" in sent and sent <= {"q0", "q1"}  # the four still queued were cancelled, never sent
    server.stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()


# ----- the local LM and the conformance kit ------------------------------------------------------------------------


def tiny_augpe(model: dict[str, Any]) -> AugPEGenerator:
    return AugPEGenerator(
        model=model,
        encoder=HashEncoder(),
        backend={"_plugin_": "local", "batch_size": 16, "num_threads": 1},
        iterations=1,
        variations=2,
        population=6,
        max_new_tokens=6,
    )


def test_local_backend_with_the_tiny_model(tiny_model: dict[str, Any]) -> None:
    gen = tiny_augpe(tiny_model)
    private = corpus([f"patient {i} reports headache" for i in range(10)], ["a", "b"] * 5)
    report = gen.fit(private, PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    assert report.epsilon_spent <= 2.0 * (1 + 1e-9) and report.details["lm_calls"] == 12
    texts = gen.sample(9).texts
    again = tiny_augpe(tiny_model)
    again.fit(private, PrivacySpec(2.0, 1e-5, noise=NoiseSource(seed=1), accountant="prv"), seed=0)
    other = tiny_augpe(tiny_model)
    other.fit(private, PrivacySpec(2.0, 1e-5, noise=NoiseSource(seed=1), accountant="prv"), seed=0)
    assert again.sample(9).texts == other.sample(9).texts and len(texts) == 9


def test_local_backend_dtype_replaces_the_model_dtype(tiny_model: dict[str, Any]) -> None:
    """`generator.backend.dtype=bfloat16` prompts the model group's LM in bf16 (the group stays fp32 for the
    generators that train on it); null keeps model.dtype; an unknown dtype is refused naming the key."""
    import torch

    bf16 = LocalBackend(tiny_model, dtype="bfloat16")
    assert {p.dtype for p in bf16.loaded().model.parameters()} == {torch.bfloat16}
    assert len(bf16.complete([ChatRequest(user="say hi")], max_new_tokens=3, temperature=1.0, top_p=1.0, seed=0)) == 1
    assert {p.dtype for p in LocalBackend(tiny_model).loaded().model.parameters()} == {torch.float32}
    with pytest.raises(ConfigError, match="generator.backend.dtype='bf16' is unknown; choose one of float32"):
        LocalBackend(tiny_model, dtype="bf16")


def test_conformance_kit(tiny_model: dict[str, Any]) -> None:
    check_generator(lambda: tiny_augpe(tiny_model))


@pytest.mark.slow
def test_cli_job_with_the_real_models(tmp_path: Path) -> None:
    run_cli(
        [
            "generator=augpe",
            "eps=4",
            "tracking=none",
            f"output_root={tmp_path}",
            "metrics=[utility]",
            "dataset.max_train=60",
            "dataset.max_eval=60",
            "task.n_synthetic=20",
            "generator.population=6",
            "generator.iterations=1",
        ],
        cwd=tmp_path,
    )
    results = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert results["status"] == "complete" and results["epsilon_spent"] <= 4.0
    assert results["generation"]["iterations"] == 1 and "votes" not in results["generation"]


# ----- label prior, population, per-iteration hook ----------------------------------------------------------------


def test_label_prior_auto_is_public_on_single_label_and_dp_on_multi_label() -> None:
    single = corpus([f"doc {i % 4} text" for i in range(12)], ["a", "b"] * 6)
    report = topic_generator().fit(single, PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    assert report.details["label_prior"] == "uniform" and "label_noise_std" not in report.details
    multi = Corpus.build(
        [f"doc {i % 4} text" for i in range(12)], [["a"], ["a", "b"]] * 6, ("a", "b"), multi_label=True
    )
    report = topic_generator().fit(multi, PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    assert report.details["label_prior"] == "dp" and report.details["label_noise_std"] > 0
    assert report.details["mechanisms"] == report.details["vote_mechanisms"] + report.details["label_mechanisms"]
    with pytest.raises(ConfigError, match="^generator.label_prior=uniform gives every synthetic document one label"):
        topic_generator(label_prior="uniform").fit(multi, PrivacySpec(2.0, 1e-5, "prv"), seed=0)


def test_population_auto_is_the_sample_size_so_nothing_is_filled() -> None:
    private = corpus([f"doc {i % 4} text" for i in range(12)], ["a", "b"] * 6)
    gen = topic_generator(population="auto")
    gen.fit(private, PrivacySpec(4.0, 1e-5, "prv"), seed=0)
    assert gen._state is not None and sum(len(p) for p in gen._state["pool"].values()) == 30  # DEFAULT_POPULATION
    gen.expect_samples(10)
    report = gen.fit(private, PrivacySpec(4.0, 1e-5, "prv"), seed=0)
    out = gen.sample(10)
    assert report.details["population"] == 10 and len(out) == 10
    assert gen.sampling_details() == {"sample_lm_calls": 0, "sample_from_population": 10, "sample_lm_s": 0.0}


def test_on_iteration_sees_the_random_population_and_each_votes_survivors() -> None:
    private = corpus([f"doc {t} private" for t in [3, 3, 3, 7, 7, 3, 7, 3]], ["a", "b"] * 4)
    seen: list[tuple[int, Corpus]] = []
    gen = topic_generator(iterations=3, population="auto")
    gen.on_iteration = lambda t, population: seen.append((t, population))
    gen.expect_samples(4)
    gen.fit(private, PrivacySpec(math.inf, 1e-5, "prv"), seed=0)
    assert [t for t, _ in seen] == [0, 1, 2, 3]
    assert all(len(p) == 4 and sorted(p.labels) == [("a",), ("a",), ("b",), ("b",)] for _, p in seen)
    assert set(seen[-1][1].texts) == set(gen.sample(4).texts)  # the last vote's survivors are the release


@pytest.mark.parametrize(
    "key,value",
    [("population", 0), ("population", "many"), ("embed_max_tokens", 0), ("label_prior", "histogram")],
)
def test_bad_options_are_refused_in_one_line(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"generator.{key}") as info:
        topic_generator(**{key: value})
    assert "\n" not in str(info.value)
