"""`InvisibleInkGenerator` end to end on a tiny chat LM: contract, budget, disjoint batches, eps=inf decoding."""

from __future__ import annotations

import inspect
import math
from collections import Counter
from importlib.resources import files
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from synbench_invisibleink import accounting
from synbench_invisibleink import generator as module
from synbench_invisibleink.generator import InvisibleInkGenerator

from synbench.api import ConfigError, Corpus, Generator, NoiseSource, PrivacySpec
from synbench.api import create_plugin as create
from synbench.api import label_sets as lsets
from synbench.api.lm import chat_prompt, load_causal_lm
from synbench.testing import check_generator, public_corpus

# Short prompts (the byte-level tiny model spends a token per character) and few tokens keep the kit's ~100 fits
# and samples quick; the shipped templates are checked by test_config_file_matches_constructor.
SHORT = {"domain": "review", "random": "{label}", "rephrase": "{text} {label}", "fill_blanks": "{masked} {label}"}
SMALL = {
    "batch_size": 2,
    "max_new_tokens": 3,
    "max_context_tokens": 8,
    "top_k": 8,
    "max_rows": 64,
    "prompts": SHORT,
    "private_prompt": "{label} {domain}: {text}\n{label} {domain}:",
    "public_prompt": "{label} {domain}:",
}


def make(model: dict[str, Any], **kw: Any) -> InvisibleInkGenerator:
    return InvisibleInkGenerator(model=model, **{**SMALL, **kw})


def test_config_file_matches_constructor(chat_model: dict[str, Any]) -> None:
    node = yaml.safe_load(files("synbench_invisibleink.conf").joinpath("generator/invisibleink.yaml").read_text())
    assert set(node) - {"_plugin_"} == set(inspect.signature(InvisibleInkGenerator).parameters)
    node.update(model=chat_model, prompts="drugreview")
    gen = create(Generator, node)
    assert isinstance(gen, InvisibleInkGenerator) and gen.prompts.domain == "patient review of a medication"


@pytest.mark.parametrize("batching", ["sequential", "hashed"])
def test_conforms_to_the_synbench_generator_contract(chat_model: dict[str, Any], batching: str) -> None:
    """The kit: budget and delta, secret noise (replicated with a noise seed), label_counts, eps=inf, no private
    text."""
    check_generator(lambda: make(chat_model, batching=batching))


def test_spends_the_budget_with_the_papers_accounting(chat_model: dict[str, Any]) -> None:
    corpus = public_corpus()
    spec = PrivacySpec(4.0, 1e-5, noise=NoiseSource(seed=0), accountant="prv")
    gen = make(chat_model, passes=2, label_rho_share=0.2, max_new_tokens=5)
    report = gen.fit(corpus, spec, seed=0)
    d = report.details
    assert report.epsilon_spent == pytest.approx(4.0, abs=1e-6) and report.epsilon_spent <= 4.0
    rho = accounting.zcdp_rho(4.0, 1e-5)
    assert d["rho_labels"] == pytest.approx(0.2 * rho) and d["rho"] == pytest.approx(rho)
    assert d["clip"] == pytest.approx(accounting.clip_for(0.8 * rho, 5, 2, 1.0, passes=2))
    assert d["rho_text"] == pytest.approx(2 * 5 * d["clip"] ** 2 / (2 * 2**2 * 1.0**2))
    assert d["label_noise_std"] == pytest.approx(math.sqrt(1 / (2 * 0.2 * rho)))
    uniform = make(chat_model, label_prior="uniform", max_new_tokens=5).fit(corpus, spec, seed=0)
    assert (
        uniform.details["clip"] == pytest.approx(accounting.clip_for(rho, 5, 2, 1.0))
        and "label_noise_std" not in uniform.details
    )


def test_multi_label_reads_epsilon_at_delta_less_the_selections(chat_model: dict[str, Any]) -> None:
    report = make(chat_model).fit(public_corpus(multi_label=True), PrivacySpec(2.0, 1e-6, "prv"), seed=0)
    assert report.delta == 1e-6 and report.details["delta_accounted"] == pytest.approx(0.9e-6)
    assert report.details["label_mechanisms"] == 2 and report.epsilon_spent == pytest.approx(2.0, abs=1e-6)


def test_batches_are_disjoint_of_one_label_set_and_used_at_most_passes_times(
    chat_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Across several sample() calls, each private document serves in at most `passes` batches, all of its own label."""
    corpus = public_corpus(per_label=7)
    seen: list[Any] = []
    real = module.decode

    def spy(model: Any, tok: Any, requests: list, *args: Any, **kw: Any) -> Any:
        seen.extend(requests)
        return real(model, tok, requests, *args, **kw)

    monkeypatch.setattr(module, "decode", spy)
    for passes in (1, 2):
        seen.clear()
        gen = make(
            chat_model, batch_size=3, passes=passes, max_new_tokens=2, max_context_tokens=200, batching="sequential"
        )
        gen.fit(corpus, PrivacySpec(2.0, 1e-5, "prv"), seed=0)
        out = [gen.sample(4), gen.sample(30), gen.sample(9, {("relief",): 9})]
        labels = [ls for o in out for ls in o.labels]
        uses: Counter = Counter()
        for request, ls in zip(seen, labels):
            assert len(request.private) <= 3
            for prompt in request.private:
                owners = [(t, lab) for t, lab in zip(corpus.texts, corpus.labels) if f": {t}\n" in prompt]
                assert len(owners) == 1 and owners[0][1] == ls  # one private document, of this label set
                uses[owners[0][0]] += 1
        assert max(uses.values()) <= passes  # no document beyond `passes`
        # each label set has ceil(7/3) = 3 batches per pass; its documents beyond those come from the public prompt only
        wanted = Counter(labels)
        assert sum(bool(r.private) for r in seen) == sum(min(k, 3 * passes) for k in wanted.values())


def test_hashed_batches_change_in_one_batch_per_pass_when_a_document_is_added(chat_model: dict[str, Any]) -> None:
    """Add/remove adjacency: with the same (DP) plan, the neighbour's batches differ by that one document, once per
    pass."""
    corpus = public_corpus(per_label=20)
    released = lsets.release(corpus, lsets.LabelSetOptions().budget(2.0, 1e-5, False), NoiseSource(seed=3))
    gen = make(chat_model, batch_size=4, passes=2, batching="hashed")
    full = gen._batches(corpus, np.random.default_rng(0), released, seed=5)
    for drop in (0, 17, len(corpus) - 1):
        fewer = gen._batches(
            corpus.subset([i for i in range(len(corpus)) if i != drop]), np.random.default_rng(0), released, seed=5
        )
        assert full.keys() == fewer.keys()
        changed = [(ls, a, b) for ls in full for a, b in zip(full[ls], fewer[ls], strict=True) if a != b]
        assert len(changed) == 2  # one batch per pass
        for ls, a, b in changed:
            assert ls == lsets.label_sets(corpus)[drop] and Counter(a) - Counter(b) == Counter([corpus.texts[drop]])
    for ls, rounds in full.items():
        weight = dict(zip(released.sets, released.weights))[ls]
        assert len(rounds) == 2 * math.ceil(weight / 4)  # K = ceil(noisy count / B) per pass
        texts = [t for t, lab in zip(corpus.texts, lsets.label_sets(corpus)) if lab == ls]
        assert sorted(t for batch in rounds[: len(rounds) // 2] for t in batch) == sorted(texts)  # each once per pass


def test_hashed_batching_is_the_default_and_results_name_each_batchings_adjacency(chat_model: dict[str, Any]) -> None:
    """Add/remove adjacency, what SynBench promises, by default; the paper's sequential batching says "replace"."""
    node = yaml.safe_load(files("synbench_invisibleink.conf").joinpath("generator/invisibleink.yaml").read_text())
    assert node["batching"] == inspect.signature(InvisibleInkGenerator).parameters["batching"].default == "hashed"
    gen = make(chat_model, batch_size=3)
    report = gen.fit(public_corpus(per_label=7), PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    assert report.epsilon_spent == pytest.approx(2.0, abs=1e-6) and report.details["batching"] == "hashed"
    assert report.details["adjacency"] == "add_remove" and "adjacency" in InvisibleInkGenerator.public_details
    assert len(gen.sample(8)) == 8
    sequential = make(chat_model, batch_size=3, batching="sequential").fit(
        public_corpus(per_label=7), PrivacySpec(2.0, 1e-5, "prv"), seed=0
    )
    assert sequential.details["batching"] == "sequential" and sequential.details["adjacency"] == "replace"


def test_eps_inf_with_one_reference_is_ordinary_decoding_from_the_private_context(chat_model: dict[str, Any]) -> None:
    """B = 1, C = inf, tau -> 0: the mechanism is argmax of the private context's logits, i.e. greedy decoding."""
    corpus = Corpus.build(["the cream calmed the itching by the morning"], [["relief"]], ["relief", "side_effect"])
    gen = make(
        chat_model,
        batch_size=1,
        max_new_tokens=12,
        max_context_tokens=64,
        temperature=1e-4,
        top_k=-1,
        label_prior="uniform",
    )
    assert math.isinf(gen.fit(corpus, PrivacySpec(math.inf, 1e-5, "prv"), seed=0).epsilon_spent)
    text = gen.sample(1, {("relief",): 1}).texts[0]
    loaded = load_causal_lm(chat_model)
    tok = loaded.tokenizer
    fields = {"label": "relief", "domain": gen.prompts.domain}
    prompt = chat_prompt(tok, gen.private_prompt.format(text=corpus.texts[0], **fields), gen.prompts.system)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    stop = [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]
    greedy = loaded.model.generate(
        **ids, do_sample=False, max_new_tokens=12, eos_token_id=stop, pad_token_id=tok.pad_token_id
    )
    assert text == tok.decode(greedy[0, ids["input_ids"].shape[1] :], skip_special_tokens=True).strip()


def test_invalid_settings_are_config_errors(chat_model: dict[str, Any]) -> None:
    for bad in (
        {"batch_size": 0},
        {"temperature": 0.0},
        {"label_prior": "x"},
        {"max_rows": 2, "batch_size": 4},
        {"public_prompt": "Write {label} like {text}"},
        {"private_prompt": "no fields"},
        {"batching": "random"},
    ):
        with pytest.raises(ConfigError):
            make(chat_model, **bad)
    with pytest.raises(ConfigError, match="before fit"):
        make(chat_model).sample(1)


def test_sampling_details_are_declared(chat_model: dict[str, Any]) -> None:
    gen = make(chat_model)
    gen.fit(public_corpus(), PrivacySpec(2.0, 1e-5, "prv"), seed=0)
    gen.sample(6)
    details = gen.sampling_details()
    assert set(details) <= InvisibleInkGenerator.public_details
    assert details["sample_tokens"] >= 6 and 8 <= details["topk_plus_mean"] and 0 <= details["expansion_share"] <= 1
    assert torch.get_num_threads() >= 1
