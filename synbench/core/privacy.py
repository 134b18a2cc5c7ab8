"""Privacy budgets, the one delta rule, the secret noise source, and Gaussian-mechanism calibration.

`PrivacySpec` is the budget a job asks for; its `NoiseSource` is where every
privacy mechanism (DP-SGD noise and Poisson masks, noisy histograms, a
plugin's own mechanisms) draws its randomness, never from the job's `seed`.
The Gaussian helpers use the
mu-GDP view (Dong, Roth & Su 2019): T Gaussian mechanisms of L2 sensitivity 1
and noise std sigma compose to mu-GDP with mu = sqrt(T) / sigma, and mu-GDP
implies (eps, delta(eps))-DP for every eps with
delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
This is exact for Gaussian mechanisms (it is the analytic Gaussian mechanism
of Balle & Wang 2018), so calibrating through it wastes no budget.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError

if TYPE_CHECKING:  # numpy is imported where it is used: `import synbench` (the core types) needs none of it
    import numpy as np

ACCOUNTANTS = ("prv", "rdp", "gdp")
# delta as a function of the private set size N. One rule serves every generator of a benchmark, so that two
# generators "at eps=4" are at the same privacy level. 1/N^2 (the SynBench authors' DP-Gen setting) keeps delta
# far below 1/N, the level at which a mechanism could publish one whole document and still claim (0, delta)-DP.
DELTA_RULES: dict[str, Callable[[int], float]] = {
    "1/N^2": lambda n: 1.0 / n**2,
    "1/(N ln N)": lambda n: 1.0 / (n * math.log(n)),  # AUG-PE's setting, for paper replication
}
DEFAULT_DELTA_RULE = "1/N^2"
# How far a generator's reported epsilon or delta may exceed the budget (float tolerance of accountants' solvers).
EPS_TOLERANCE = 1e-6
# The GDP root finders' tolerances: relative, so that a tiny budget (eps=1e-9) is calibrated as exactly as eps=4
# (an absolute 1e-12 was 0.1% of eps=1e-9, which the budget check then blamed on the plugin).
ROOT_RTOL = 1e-13
ROOT_XTOL = 1e-300
# The largest finite eps a job may ask for. Far above any meaningful guarantee, and below where the accountants'
# calibration stops finishing (PRV at eps=1e6 searches noise multipliers near 0 for hours) or overflows (e^eps).
MAX_EPSILON = 100.0


def check_delta_setting(delta: float | str | None) -> None:
    """A configured `delta`: null, a rule of `DELTA_RULES`, or a number strictly between 0 and 1."""
    if delta is None or (isinstance(delta, str) and delta in DELTA_RULES):
        return
    if isinstance(delta, str):
        try:
            value = float(delta)
        except ValueError:
            raise ConfigError(
                f"delta={delta!r} is unknown; use a number in (0, 1), null (= {DEFAULT_DELTA_RULE}) "
                f"or one of the rules {', '.join(repr(r) for r in DELTA_RULES)}"
            ) from None
    else:
        value = _as_float(delta, "delta")
    if not 0.0 < value < 1.0:
        raise ConfigError(f"delta={delta} is invalid: it must lie strictly between 0 and 1")


def resolve_delta(delta: float | str | None, n: int, allow_large: bool = False) -> float:
    """The job's delta: a number as configured, or a rule of `DELTA_RULES` (null: 1/N^2) applied to N.

    The core resolves it once per job, from the private set size fixed before
    any generator runs, and passes it to every generator in `PrivacySpec`.
    A delta of 1/N or more is refused unless `allow_large`
    (`privacy.allow_large_delta=true`): at that level a mechanism may publish
    a whole document and still meet (eps, delta).
    """
    check_delta_setting(delta)
    if delta is None or delta in DELTA_RULES:
        rule = DEFAULT_DELTA_RULE if delta is None else str(delta)
        if n < 2:
            raise ConfigError(
                f"the private set has {n} document(s); delta={rule} needs N >= 2, so set delta to a number"
            )
        value = DELTA_RULES[rule](n)
    else:
        value = float(delta)
    if value * n >= 1 and not allow_large:
        raise ConfigError(
            f"delta={delta if delta is not None else DEFAULT_DELTA_RULE} is {value:.3g}, at least 1/N for "
            f"the N={n} private documents, where a mechanism may publish a whole document; set a smaller "
            f"delta (null = {DEFAULT_DELTA_RULE}) or privacy.allow_large_delta=true"
        )
    return value


@dataclass(frozen=True)
class NoiseSource:
    """Where every privacy mechanism draws its noise: secret OS entropy, or a replication seed.

    `seed=None` (the default) seeds each stream from the operating system's
    entropy pool, so the noise is secret even to someone who knows the job's
    published `seed`, and two fits of one job draw different noise. A `seed`
    makes the noise reproducible for research replication; output made so is
    not DP against anyone who knows that seed, and results say `"noise": "seeded"`.

    `secure_mode` switches DP-SGD to Opacus' noise sampling that resists
    floating-point attacks (each draw the sum of four Gaussians). Opacus pairs
    it with torchcsprng, which has no build for current torch; here the torch
    generator is seeded with 64 bits of OS entropy instead (see docs/release.md).
    """

    seed: int | None = None
    secure_mode: bool = False

    @property
    def mode(self) -> str:
        """`secure` (OS entropy) or `seeded` (replication): the `noise` field of results.json."""
        return "secure" if self.seed is None else "seeded"

    def _sequence(self, stream: str) -> np.random.SeedSequence:
        import numpy as np

        key = int.from_bytes(hashlib.sha256(stream.encode()).digest()[:8], "little")
        return np.random.SeedSequence(self.seed, spawn_key=(key,))  # entropy=None: 128 bits from the OS

    def numpy(self, stream: str) -> np.random.Generator:
        """A numpy generator for the named mechanism (independent streams per name)."""
        import numpy as np

        return np.random.default_rng(self._sequence(stream))

    def torch(self, stream: str, device: Any = "cpu") -> Any:
        """A torch generator on `device` for the named mechanism (DP-SGD noise, Poisson masks)."""
        import numpy as np
        import torch

        generator = torch.Generator(device=device)
        generator.manual_seed(int(self._sequence(stream).generate_state(1, np.uint64)[0]))
        return generator

    def for_run(self, index: int) -> "NoiseSource":
        """The source of run `index` of a multi-run job (an audit): seeded runs get independent derived seeds."""
        if self.seed is None:
            return self
        import numpy as np

        return replace(self, seed=int(np.random.SeedSequence([self.seed, index]).generate_state(1, np.uint64)[0]))


@dataclass(frozen=True)
class PrivacySpec:
    """The budget a generator must meet: (epsilon, delta), the accountant, and the noise source.

    `epsilon = inf` means no DP. `delta` is always set: the core resolves the
    job's `delta` config once (`for_private_set`), and a generator uses it as
    given, never a default of its own.
    """

    epsilon: float
    delta: float
    accountant: str  # the job's (the schema's `accountant` holds the default)
    noise: NoiseSource = field(default_factory=NoiseSource)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        delta = _as_float(self.delta, "delta")  # a number here: the core has resolved any rule
        check_delta_setting(delta)
        object.__setattr__(self, "delta", delta)
        check_accountant(self.accountant)

    @classmethod
    def for_private_set(
        cls,
        n: int,
        epsilon: float,
        delta: float | str | None,
        accountant: str,
        noise: NoiseSource | None = None,
        *,
        allow_large_delta: bool,
    ) -> "PrivacySpec":
        """The spec for a private set of `n` documents, with `delta` resolved by the benchmark's one rule (the job's
        `delta`, `accountant` and `privacy.allow_large_delta`: their defaults are the schema's, not this method's)."""
        return cls(epsilon, resolve_delta(delta, n, allow_large_delta), accountant, noise or NoiseSource())

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)


def check_epsilon(value: object) -> float:
    """A configured `eps` as a float: positive and at most `MAX_EPSILON`, or inf for no DP."""
    eps = _as_float(value, "eps")
    if math.isnan(eps) or eps <= 0:
        raise ConfigError(f"eps={value} is invalid: use a positive number, or eps=inf for no DP")
    if MAX_EPSILON < eps < math.inf:
        raise ConfigError(
            f"eps={value} is above {MAX_EPSILON:g}, the largest finite budget the accountants calibrate; "
            f"use eps<={MAX_EPSILON:g}, or eps=inf for the same pipeline without DP"
        )
    return eps


def check_accountant(name: object) -> str:
    if name not in ACCOUNTANTS:
        raise ConfigError(f"accountant={name!r} is unknown; choose one of {', '.join(ACCOUNTANTS)}")
    return str(name)


def _as_float(value: object, key: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} is not a number") from None


def gdp_delta(epsilon: float, mu: float) -> float:
    """delta(eps) of a mu-GDP mechanism."""
    from scipy.special import log_ndtr, ndtr  # scipy here, not at the top: every CLI start imports this module

    if mu <= 0 or epsilon == math.inf:
        return 0.0
    a = -epsilon / mu + mu / 2
    b = -epsilon / mu - mu / 2
    return float(ndtr(a) - math.exp(epsilon + log_ndtr(b)))


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    if not math.isfinite(epsilon):
        return math.inf
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta={delta} must lie in (0, 1)")
    hi = 1.0
    while gdp_delta(epsilon, hi) < delta:
        hi *= 2.0
    from scipy.optimize import brentq

    lo = hi / 2
    while gdp_delta(epsilon, lo) > delta:  # a tiny epsilon puts mu far below 1
        lo /= 2.0
    mu = float(brentq(lambda m: gdp_delta(epsilon, m) - delta, lo, hi, xtol=ROOT_XTOL, rtol=ROOT_RTOL))
    while gdp_delta(epsilon, mu) > delta:  # the root finder may land a hair above: never overspend
        mu *= 1 - 1e-12
    return mu


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon for which mu-GDP implies (epsilon, delta)-DP."""
    if not math.isfinite(mu):
        return math.inf
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    from scipy.optimize import brentq

    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
    eps = float(brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, hi, xtol=ROOT_XTOL, rtol=ROOT_RTOL))
    while gdp_delta(eps, mu) > delta:  # the root finder may land a hair below: never under-report
        eps *= 1 + 1e-12
    return eps


def gaussian_sigma(epsilon: float, delta: float, compositions: int = 1) -> float:
    """Noise std for `compositions` Gaussian mechanisms of L2 sensitivity 1 to meet (epsilon, delta) together."""
    if compositions < 1:
        raise ValueError(f"compositions={compositions} must be at least 1")
    if not math.isfinite(epsilon):
        return 0.0
    return math.sqrt(compositions) / gdp_mu(epsilon, delta)


def noisy_label_histogram(corpus: Corpus, sigma: float, noise: NoiseSource) -> np.ndarray:
    """Per-label document counts over the public `label_space`, with Gaussian noise.

    Each document's label indicator row is scaled to unit L2 norm, so adding or
    removing one document changes the histogram by at most 1 in L2: one Gaussian
    mechanism of sensitivity 1. Returns non-negative weights (not rounded).
    """
    import numpy as np

    rows = corpus.label_matrix().astype(float)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    counts = (rows / np.maximum(norms, 1.0)).sum(axis=0)
    noisy = counts + noise.numpy("label_histogram").normal(0.0, sigma, size=counts.shape) if sigma > 0 else counts
    return np.clip(noisy, 0.0, None)


def allocate(n: int, weights: np.ndarray) -> np.ndarray:
    """Split n items over categories in proportion to `weights` (largest remainder); uniform if all are 0."""
    import numpy as np

    w = np.asarray(weights, dtype=float)
    if w.size == 0 or not np.all(np.isfinite(w)):
        raise ValueError("allocate needs a non-empty vector of finite weights")
    w = np.full_like(w, 1.0) if w.sum() <= 0 else w
    share = n * w / w.sum()
    base = np.floor(share).astype(int)
    rest = n - int(base.sum())
    base[np.argsort(-(share - base), kind="stable")[:rest]] += 1
    return base
