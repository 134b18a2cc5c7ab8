"""`check_generator`: the contracts of a `synbench.core.base.Generator`, checked from outside, as named checks.

The generator is a black box built by `factory()`: the kit fits it on its own
small public corpus (with random sentinel words planted, playing the private
set) under budgets made with `PrivacySpec`, samples from it and reads what
comes back. What it cannot see (whether the noise is calibrated to the
sensitivity the author claims) the author's own tests must show; what it can
see is what the core relies on when it writes a release. Each named check of
`generator_checks` (what `parametrize_with_checks` turns into one pytest case
each) guarantees one part:

- `api`: a `Generator` subclass whose class declarations the registry accepts,
  and `sample` before `fit` a `SynBenchError` the app can print;
- `fit-sample` (and `fit-sample-multi-label`): at the budget, `epsilon_spent`
  within eps and `delta` within the job's; `FitReport.details` keys declared
  in `public_details`; no private text in `details` or `private_stats`;
  `sample(n)` a `Corpus` of n documents labelled from the label space;
  `label_counts` followed exactly;
- `no-dp`: `eps=inf` runs the same pipeline and samples;
- `sentinels`: at half the budget and delta=1e-9 (so neither can be
  hard-coded) with a fresh random word in every private document, `sample()`
  output holds none of them (`sentinel_check` states why this cannot fail a
  DP generator);
- `noise`: a replication noise seed (`NoiseSource(seed=k)`) reproduces the
  output, and secret noise (`NoiseSource()`) changes what two fits with the
  same public `seed` release, so the noise comes from `privacy.noise` and the
  output is not a function of the seed and the data alone;
- `audit` (only with `audit=True`): a one-run canary audit
  (`synbench.testing.canary_audit`) whose 95% lower bound on epsilon must not
  exceed the epsilon the generator reports.

A built-in non-private control (`copy`, `public`) is checked only on the
contracts that do not involve a budget or noise: its `no-dp`, `sentinels`,
`noise` and `audit` checks pass without running.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import SynBenchError
from synbench.core.privacy import EPS_TOLERANCE, NoiseSource, PrivacySpec
from synbench.core.schema import PrivacyOptions, SynBenchConfig
from synbench.job import release
from synbench.testing.canary_audit import AUDIT_CANARIES, AUDIT_CONFIDENCE, CanaryAudit
from synbench.testing.checks import Checks, ConformanceError, Failure, begin, describe
from synbench.testing.corpora import SENTINEL_LETTERS, plant_sentinels, public_corpus
from synbench.testing.values import canonical, is_number

STRICT_DELTA = 1e-9  # far below 1/N^2 of the kit's corpora: a generator that ignores privacy.delta reports more
NOISE_SEED = 1234  # the replication noise seed of the replication check
SAMPLE_SIZES = (1, 17)
FINGERPRINT_DOCS = 24  # documents compared between fits: enough that noise in the model shows in the text
SECRET_TRIES = 3  # fits with secret noise; output identical in all of them means the noise is not secret


def job_budget(n: int, epsilon: float, noise: NoiseSource | None = None) -> PrivacySpec:
    """The budget a job with the schema's privacy defaults (delta, accountant, privacy.*) gives `n` documents."""
    job, privacy = SynBenchConfig, PrivacyOptions()
    return PrivacySpec.for_private_set(
        n, epsilon, job.delta, job.accountant, noise, allow_large_delta=privacy.allow_large_delta
    )


GeneratorCheck = Callable[[], None]


@dataclass(frozen=True)
class _Private:
    """The corpus a fit sees as private, and how to recognise its text elsewhere."""

    corpus: Corpus
    sentinels: tuple[str, ...]

    def leaks(self, text: str) -> bool:
        """True if `text` holds a planted sentinel (any case) or a whole private document."""
        return self.sentinel_hits(text) > 0 or any(doc in text for doc in self.corpus.texts if len(doc) >= 20)

    def sentinel_hits(self, text: str) -> int:
        """How many distinct planted sentinels `text` holds (any case)."""
        low = text.lower()
        return sum(s in low for s in self.sentinels)


@dataclass(frozen=True)
class GeneratorKit:
    """One generator under test and the kit's options: what every named check of it shares.

    `factory` returns a fresh, unfitted generator on each call (a class with
    default arguments will do). The kit fits on its own small public corpora:
    single-label and, with `multi_label` (False for a generator that only
    supports single-label tasks), multi-label; or on `corpus` instead, when
    given. `epsilon` is the budget of the private fits. `private` defaults to
    True for every generator but the core's built-in controls (`copy`,
    `public`: `synbench.job.release.is_control`, by class identity; a plugin
    cannot declare itself one). `audit` adds the one-run
    canary audit with `audit_canaries` canaries at `audit_confidence`.
    """

    factory: Callable[[], Generator]
    corpus: Corpus | None = None
    epsilon: float = 2.0
    multi_label: bool = True
    private: bool | None = None
    seed: int = 0
    audit: bool = False
    audit_canaries: int = AUDIT_CANARIES
    audit_confidence: float = AUDIT_CONFIDENCE

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon={self.epsilon} must be a finite positive budget for the private fits")
        if self.audit_canaries < 2 or not 0 < self.audit_confidence < 1:
            raise ValueError(
                f"audit_canaries={self.audit_canaries} must be at least 2 and audit_confidence="
                f"{self.audit_confidence} lie strictly between 0 and 1"
            )

    def checks(self) -> Iterator[tuple[str, GeneratorCheck]]:
        """(name, check) for each named check; a check raises `ConformanceError` naming what it found broken."""
        yield "api", self.check_api
        yield "fit-sample", lambda: self.run(lambda run: run.corpus_contracts(self.first_corpus()))
        if self.corpus is None and self.multi_label:
            yield (
                "fit-sample-multi-label",
                lambda: self.run(lambda run: run.corpus_contracts(public_corpus(multi_label=True))),
            )
        yield "no-dp", lambda: self.run(lambda run: run.no_dp(self.first_corpus()), private_only=True)
        yield "sentinels", lambda: self.run(lambda run: run.sentinel_check(self.first_corpus()), private_only=True)
        yield "noise", lambda: self.run(lambda run: run.noise_contracts(self.first_corpus()), private_only=True)
        if self.audit:
            yield (
                "audit",
                lambda: self.run(
                    lambda run: run.canary_audit(self.audit_canaries, self.audit_confidence), private_only=True
                ),
            )

    def first_corpus(self) -> Corpus:
        """The corpus of the single-corpus checks: the caller's, or the kit's single-label one."""
        return self.corpus if self.corpus is not None else public_corpus()

    def check_api(self) -> None:
        """The class the registry would load, and `sample` before `fit` a `SynBenchError`."""
        first, checks = begin("generator", self.factory, Generator)
        _GeneratorRun(checks, self, self.is_private(first)).sample_before_fit(first)
        checks.done()

    def run(self, body: Callable[["_GeneratorRun"], None], private_only: bool = False) -> None:
        """Run one check's `body` on a fresh collector; a non-private control skips the `private_only` ones."""
        first = self.factory()
        checks = Checks("generator", describe(first))
        if not isinstance(first, Generator):
            checks.stop(
                "subclass",
                f"factory() returned a {type(first).__name__}, not a synbench.core.base.Generator",
                "subclass synbench.core.base.Generator and pass the class (or a function building a fresh instance)",
            )
        private = self.is_private(first)
        if private or not private_only:
            body(_GeneratorRun(checks, self, private))
        checks.done()

    def is_private(self, generator: Generator) -> bool:
        return not release.is_control(generator) if self.private is None else self.private


def generator_checks(factory: Callable[[], Generator], **options: Any) -> Iterator[tuple[str, GeneratorCheck]]:
    """The named checks of `factory`'s generators: (name, check) pairs, each check a call with no arguments.

    `options` are `GeneratorKit`'s (corpus, epsilon, multi_label, private,
    seed, audit, audit_canaries, audit_confidence). A check raises
    `ConformanceError` naming every contract it found broken, so a plugin
    author sees each check pass or fail on its own (`parametrize_with_checks`
    makes one pytest case of each).
    """
    return GeneratorKit(factory, **options).checks()


def check_generator(factory: Callable[[], Generator], **options: Any) -> None:
    """Run every named check of `generator_checks(factory, **options)`; raise one `ConformanceError` naming all
    failures.

    The one-call entry, as scikit-learn's `check_estimator`: every check runs
    (a failure in one does not hide the others) and each broken contract is
    reported once, with its fix; the first plugin exception is chained as the
    cause, so pytest shows its traceback.
    """
    failures: list[Failure] = []
    plugin, cause = "", None
    for _, check in generator_checks(factory, **options):
        try:
            check()
        except ConformanceError as exc:
            plugin = exc.plugin
            failures += [f for f in exc.failures if f.contract not in {g.contract for g in failures}]
            cause = cause or exc.__cause__
            if "subclass" in exc.contracts:
                break  # not a generator: nothing else can run
    if failures:
        raise ConformanceError("generator", plugin, failures) from cause


def parametrize_with_checks(factories: Sequence[Callable[[], Generator]], **options: Any) -> Any:
    """A pytest decorator: one test case per (generator, named check), as scikit-learn's `parametrize_with_checks`.

    The test takes one argument, `check`, and calls it::

        @parametrize_with_checks([MyGenerator, lambda: MyGenerator(order=2)])
        def test_conformance(check):
            check()

    Case ids are `<factory>-<check>` (`MyGenerator-sentinels`); a lambda is
    named by its position (`generator1-noise`). `options` go to every
    factory's `generator_checks`.
    """
    import pytest

    params = []
    for i, factory in enumerate(factories):
        name = getattr(factory, "__name__", "")
        name = name if name.isidentifier() else f"generator{i}"
        params += [
            pytest.param(check, id=f"{name}-{check_name}") for check_name, check in generator_checks(factory, **options)
        ]
    return pytest.mark.parametrize("check", params)


class _GeneratorRun:
    """The work of one named check: fits and samples of fresh generators, each result checked against the contracts."""

    def __init__(self, checks: Checks, kit: GeneratorKit, private: bool) -> None:
        self.checks, self.factory, self.seed, self.private = checks, kit.factory, kit.seed, private
        self.epsilon = kit.epsilon if private else math.inf

    def sample_before_fit(self, generator: Generator) -> None:
        fix = (
            "raise synbench.core.errors.SynBenchError (or a subclass such as ConfigError) saying that fit() must come "
            "first: the app prints those as a one-line error, anything else as a traceback"
        )
        try:
            generator.sample(3)
        except SynBenchError:
            return
        except Exception as exc:
            self.checks.fail(
                "sample-before-fit",
                f"sample(3) before fit() raised {type(exc).__name__}, not a synbench.core.errors.SynBenchError",
                fix,
            )
        else:
            self.checks.fail("sample-before-fit", "sample(3) before fit() returned instead of raising", fix)

    def corpus_contracts(self, corpus: Corpus) -> None:
        """Fit at the budget and sample: budget, release, sizes, labels and label_counts."""
        private = _Private(*plant_sentinels(corpus))
        where = f"on corpus '{corpus.name}' at eps={self.epsilon:g}"
        generator, _ = self.fit(private, job_budget(len(corpus), self.epsilon), where)
        for size in SAMPLE_SIZES:
            self.sample(generator, corpus, size, where)
        self.label_counts(generator, corpus, where)

    def no_dp(self, corpus: Corpus) -> None:
        """`eps=inf`: the same pipeline without DP fits and samples as many documents as it saw."""
        where = f"on corpus '{corpus.name}' at eps=inf"
        private = _Private(*plant_sentinels(corpus))
        generator, _ = self.fit(private, job_budget(len(corpus), math.inf), where, contract="eps-inf")
        self.sample(generator, corpus, len(corpus), where, contract="eps-inf")

    def sentinel_check(self, corpus: Corpus) -> None:
        """No planted sentinel in what `sample()` writes after a private fit; also a budget neither hard-coded.

        Every document of the private corpus gets its own sentinel, a word of
        `SENTINEL_LETTERS` = 20 letters drawn uniformly from a-z by `secrets`
        (A = 26^20, about 2^94 values), fresh on every call. The fit is at
        eps' = eps/2 and delta' = 1e-9 (`STRICT_DELTA`), and the generator
        writes n = N documents (N = the private set size).

        Why an honest generator cannot fail: let M be (eps', delta')-DP under
        add/remove adjacency, D the planted corpus and D_j = D without
        document j. M(D_j) never reads sentinel s_j, and s_j is independent of
        everything in D_j (each sentinel is drawn on its own), so for an output
        of at most L characters P[s_j in M(D_j)] <= L / A: each of the at most
        L places where s_j could start matches a uniform word with
        probability 1/A. DP bounds the same event on D:
        P[s_j in M(D)] <= e^eps' L / A + delta'. A union over the N sentinels
        bounds the false-failure rate by N (e^eps' L / A + delta'); with
        N = 36, eps' = 1 and L = 10^9 characters this is below 4e-8, the
        delta' term dominating, which is why the fit uses delta' = 1e-9 and
        not the job rule's 1/N^2 (7.7e-4 here: N delta would be 3 %). Under
        replace adjacency (D_j: document j with another word) the argument is
        the same. A generator that writes each private document verbatim with
        probability 1/2 is missed with probability 2^-N = 2^-36.
        """
        private = _Private(*plant_sentinels(corpus, every=1))
        privacy = PrivacySpec(self.epsilon / 2, STRICT_DELTA, SynBenchConfig.accountant)  # the schema's accountant
        where = f"on corpus '{corpus.name}' at eps={privacy.epsilon:g}, delta={STRICT_DELTA:g}"
        generator, _ = self.fit(private, privacy, where)
        out = self.sample(generator, corpus, len(corpus), where)
        hits = private.sentinel_hits("\n".join(out.texts))  # distinct sentinels, however often each came out
        if hits:
            self.checks.fail(
                "sample-leak",
                f"sample({len(corpus)}) after fit() {where} wrote {hits} of the {len(private.sentinels)} "
                f"random {SENTINEL_LETTERS}-letter sentinel words planted one per private document: a DP generator "
                "writes a word it could only have read in one document with probability below 1e-7",
                "never copy private text into the output (documents, phrases or rare words): everything sample() "
                "writes must come from what the DP mechanism released (a noisy model, noisy votes, noisy decoding)",
            )

    def canary_audit(self, n_canaries: int, confidence: float) -> None:
        """The one-run canary audit: its lower bound on eps must not exceed the eps the fit reports."""
        audit = CanaryAudit.draw(n_canaries)
        privacy = job_budget(audit.planned_size, self.epsilon)
        where = f"on the kit's audit corpus with {n_canaries} canaries at eps={self.epsilon:g}"
        generator, report = self.fit(_Private(audit.private, ()), privacy, where, contract="audit")
        out = self.sample(generator, audit.private, audit.planned_size, where, contract="audit")
        bound = float(audit.bound(out, privacy.delta, confidence)["eps_emp_lower"])
        if bound > report.epsilon_spent * (1 + EPS_TOLERANCE):
            self.checks.fail(
                "audit",
                f"a one-run canary audit {where} bounds epsilon below by {bound:.3g} at {confidence:.0%} "
                f"confidence, above the epsilon_spent={report.epsilon_spent:.3g} the fit reports",
                "the generator leaks more than its accounting claims: check that every read of private data goes "
                "through a calibrated mechanism and that the sensitivity the noise is calibrated to holds",
            )

    def noise_contracts(self, corpus: Corpus) -> None:
        """Replication with a noise seed, then secret noise: it must change what two fits with one `seed` release.

        Sound for an honest generator: output that repeats exactly over
        three fits with secret noise (24 documents and every statistic a
        replication seed reproduces) is, but for chance, a function of the
        public seed and the data alone, and such a function is DP only if it
        ignores the data. A generator that reports epsilon_spent = 0 (reads
        no private data) is not asked to vary.
        """
        private = _Private(*plant_sentinels(corpus))
        where = f"on corpus '{corpus.name}' at eps={self.epsilon:g}"

        def fingerprint(noise: NoiseSource) -> tuple[FitReport, tuple[Any, ...], dict[str, Any]]:
            generator, report = self.fit(private, job_budget(len(corpus), self.epsilon, noise), where)
            out = self.sample(generator, corpus, FINGERPRINT_DOCS, where)
            return report, (out.texts, out.labels), {k: canonical(v) for k, v in report.details.items()}

        report, text, details = fingerprint(NoiseSource(seed=NOISE_SEED))
        _, text_again, details_again = fingerprint(NoiseSource(seed=NOISE_SEED))
        if text != text_again:
            self.checks.fail(
                "replication",
                f"two fits {where} with seed={self.seed} and the same replication noise "
                f"NoiseSource(seed={NOISE_SEED}) sampled different documents",
                "draw privacy noise only from privacy.noise and every other random choice (sampling, decoding, "
                "subsampling) from `seed`, so that privacy.noise_seed replicates a run",
            )
        if not 0 < report.epsilon_spent < math.inf:
            return  # 0: it reads no private data, so it has no noise to draw; inf: no DP (a budget failure already)
        # Details that a replication seed reproduces (not wall-clock times) show noise when they differ.
        stable = {k for k, v in details.items() if details_again.get(k) == v}
        _, first_text, first_details = fingerprint(NoiseSource())
        for _ in range(SECRET_TRIES - 1):
            _, other_text, other_details = fingerprint(NoiseSource())
            if other_text != first_text or any(other_details.get(k) != first_details.get(k) for k in stable):
                return
        self.checks.fail(
            "noise-source",
            f"{SECRET_TRIES} fits {where} with seed={self.seed} and secret noise (NoiseSource()) "
            "sampled the same documents and released the same statistics: the output is a function of the public "
            "seed and the data alone, so the privacy noise does not come from privacy.noise",
            "draw every bit of privacy noise from privacy.noise (privacy.noise.numpy('<mechanism>') "
            "or privacy.noise.torch('<mechanism>')), never from `seed` or a fixed RNG: noise that the published "
            "seed determines is known to an attacker, and the output is then not DP",
        )

    def fit(
        self, private: _Private, privacy: PrivacySpec, where: str, contract: str = "fit"
    ) -> tuple[Generator, FitReport]:
        """A fresh generator fitted on the private corpus, with its report's budget and release checked."""
        generator = self.factory()
        with self.checks.running(contract, f"fit() {where}"):
            report = generator.fit(private.corpus, privacy, self.seed)
        if not isinstance(report, FitReport):
            self.checks.stop(
                "fit-report",
                f"fit() {where} returned a {type(report).__name__}, not a synbench.core.base.FitReport",
                "return FitReport(epsilon_spent=<what your accountant computed>, delta=privacy.delta, details={...})",
            )
        for key in ("epsilon_spent", "delta"):
            value = getattr(report, key)
            if not is_number(value) or math.isnan(value):
                self.checks.stop(
                    "fit-report",
                    f"fit() {where} reported {key}={value!r}, not a number",
                    "report the epsilon and delta your accountant computed, as floats (inf for no DP)",
                )
        self.budget(report, privacy, where)
        self.release(generator, report, private, where)
        return generator, report

    def budget(self, report: FitReport, privacy: PrivacySpec, where: str) -> None:
        if not (self.private and privacy.is_private):
            return
        eps, delta = report.epsilon_spent, report.delta
        if not math.isfinite(eps) or eps < 0:
            self.checks.fail(
                "budget-epsilon",
                f"fit() {where} reported epsilon_spent={eps} for a private request",
                "meet a private request with the finite epsilon your accountant computed; only the core's "
                "built-in controls (copy, public) may report inf, and a plugin cannot declare itself one",
            )
        elif eps > privacy.epsilon * (1 + EPS_TOLERANCE):
            self.checks.fail(
                "budget-epsilon",
                f"fit() {where} reported epsilon_spent={eps:.6g}, more than eps={privacy.epsilon:g}",
                "calibrate the noise so that all mechanisms that read private data together (composition "
                "included) meet privacy.epsilon; the core fails a job that reports more",
            )
        if delta < 0 or delta > privacy.delta * (1 + EPS_TOLERANCE):
            self.checks.fail(
                "budget-delta",
                f"fit() {where} reported delta={delta:.3g}, not within the delta={privacy.delta:.3g} it was given",
                "use privacy.delta as given (the core resolves one "
                "delta for every generator on a dataset), never a default of your own",
            )

    def release(self, generator: Generator, report: FitReport, private: _Private, where: str) -> None:
        """`details` keys declared public; no private text in details or private_stats; private_stats numeric."""
        declared = type(generator).public_details
        undeclared = sorted(set(report.details) - set(declared))
        if undeclared:
            self.checks.fail(
                "public-details",
                f"FitReport.details has key(s) {undeclared} that "
                f"{type(generator).__name__}.public_details does not declare (the core drops them)",
                "declare in public_details the keys that are public plan values or statistics of DP "
                "output, and move statistics of private data to FitReport.private_stats",
            )
        for path, text in [*_strings(report.details, "details"), *_strings(report.private_stats, "private_stats")]:
            if private.leaks(text):
                self.checks.fail(
                    "private-text",
                    f"FitReport.{path} after fit() {where} holds text of the private "
                    "corpus (a planted sentinel word or a whole document)",
                    "details go to results.json and private_stats to trackers: put only numbers and "
                    "public plan values there, never words or documents read off private data",
                )
                break
        for key, value in report.private_stats.items():
            per_step = isinstance(value, (list, tuple)) and all(is_number(v) for v in value)
            if not (is_number(value) or per_step):
                self.checks.fail(
                    "private-stats",
                    f"FitReport.private_stats[{key!r}] is a {type(value).__name__}",
                    "a private_stats value is a number or a per-step list of numbers",
                )

    def sample(
        self,
        generator: Generator,
        corpus: Corpus,
        n: int,
        where: str,
        label_counts: Mapping[Labels, int] | None = None,
        contract: str = "sample-output",
    ) -> Corpus:
        """`sample(n[, label_counts])`: a Corpus of exactly n str documents, labelled from the label space."""
        call = f"sample({n})" if label_counts is None else f"sample({n}, label_counts={_show(label_counts)})"
        with self.checks.running(contract, f"{call} after fit() {where}"):
            out = generator.sample(n) if label_counts is None else generator.sample(n, label_counts)
        fix = (
            "return Corpus.build(texts, labels, corpus.label_space, multi_label=corpus.multi_label) "
            "with exactly n documents"
        )
        if not isinstance(out, Corpus):
            self.checks.stop(
                "sample-output", f"{call} {where} returned a {type(out).__name__}, not a synbench.api.Corpus", fix
            )
        if len(out) != n or not all(isinstance(t, str) for t in out.texts):
            self.checks.fail(
                "sample-output",
                f"{call} {where} returned {len(out)} documents "
                f"({sum(not isinstance(t, str) for t in out.texts)} of them not str)",
                fix,
            )
        space = set(corpus.label_space)
        wrong = [ls for ls in out.labels if not ls or not set(ls) <= space or (not corpus.multi_label and len(ls) != 1)]
        if wrong:
            self.checks.fail(
                "labels",
                f"{call} {where}: {len(wrong)} document(s) labelled {wrong[0]!r}, outside the "
                f"label space {corpus.label_space}{'' if corpus.multi_label else ' (one label each)'}",
                "label each synthetic document from the fitted corpus' label_space: one label on a "
                "single-label task, at least one on a multi-label task",
            )
        return out

    def label_counts(self, generator: Generator, corpus: Corpus, where: str) -> None:
        """`label_counts` followed exactly, asked with the rarest label sets most: the opposite of any histogram."""
        wanted = _label_request(corpus)
        out = self.sample(generator, corpus, sum(wanted.values()), where, wanted, contract="label-counts")
        got = Counter(_ordered(ls, corpus) for ls in out.labels)
        if got != Counter({_ordered(k, corpus): v for k, v in wanted.items()}):
            self.checks.fail(
                "label-counts",
                f"sample({len(out)}, label_counts={_show(wanted)}) {where} returned the label counts {_show(got)}",
                "when label_counts is given, write exactly that many documents "
                "of each label set: the caller, not the generator's label histogram, sets the distribution",
            )


def _label_request(corpus: Corpus) -> dict[Labels, int]:
    """Up to four label sets of `corpus`, the rarer the more documents asked for (1, 2, 4, 8)."""
    order = {label: i for i, label in enumerate(corpus.label_space)}
    freq = Counter(_ordered(ls, corpus) for ls in corpus.labels)
    chosen = sorted(freq, key=lambda s: (freq[s], [order[x] for x in s]))[:4]
    return {s: 2 ** (len(chosen) - 1 - i) for i, s in enumerate(chosen)}


def _ordered(labels: Labels, corpus: Corpus) -> Labels:
    """A label set in label-space order, so ('b', 'a') and ('a', 'b') count as one."""
    order = {label: i for i, label in enumerate(corpus.label_space)}
    return tuple(sorted(labels, key=lambda x: order.get(x, len(order))))


def _show(counts: Mapping[Labels, int]) -> str:
    return "{" + ", ".join(f"{'+'.join(k)}: {v}" for k, v in sorted(counts.items())) + "}"


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside `value`, with where it is: keys, items, string arrays, and the repr of other objects."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, bytes):
        yield path, value.decode("utf-8", "replace")
    elif value is None or isinstance(value, (numbers.Number, np.number, np.bool_)):
        return
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, f"{path} (a key)")
            yield from _strings(item, f"{path}[{key!r}]")
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "OUSV":
            for i, item in enumerate(value.ravel().tolist()):
                yield from _strings(item, f"{path}[{i}]")
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")
    else:  # any other object: its repr may carry text (a Corpus's does)
        yield path, repr(value)
