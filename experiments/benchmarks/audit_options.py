"""The black-box attacks' options measured on the calibration bench, and the docs table rendered from those figures.

Each row changes one option of an attack and keeps the attack's configured
defaults for the rest (so the row of a default value is the default attack).
`bench_audit_calibration.py` runs every distinct configuration on every cell
of its grid and writes the figures under `options` in
`results/bench_audit_calibration.json`; `options_table` renders them as
`results/audit_options.md`, which docs/audit.md includes and a test compares
with the JSON. Light on purpose (no synbench import): the docs test imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

AUTHORS = "SynBench authors, `mia/ngram.py` + `mia/attack.py` (schlevik/dp-transformers)"
ECHO = "The Canary's Echo, `mia_methods.py` (matthieumeeus/dp-transformers)"


@dataclass(frozen=True)
class OptionRow:
    """One option value of one attack, and the public code it matches."""

    attack: str  # ngram | similarity
    key: str
    value: object
    reference: str

    @property
    def label(self) -> str:
        return (
            f"attack.{self.attack}.{self.key}={str(self.value).lower() if isinstance(self.value, bool) else self.value}"
        )


OPTION_ROWS = (
    OptionRow("ngram", "normalise", "none", f"{AUTHORS}: the sum of token log-probabilities"),
    OptionRow("ngram", "normalise", "per_token", "ours: the score over the target's scored n-grams"),
    OptionRow("ngram", "normalise", "reference_z", "ours, after LiRA's per-example spread (tensorflow/privacy)"),
    OptionRow("ngram", "calibration", "log_mean", f"{AUTHORS}: minus the mean reference log-probability"),
    OptionRow("ngram", "calibration", "rmia", "privacy_estimates' online RMIA (`rmia.py`), used by The Canary's Echo"),
    OptionRow("ngram", "pad_target", True, f"{AUTHORS}: the target padded with `<s>`, `</s>`"),
    OptionRow("ngram", "pad_target", False, f"{ECHO}: the target's n-grams unpadded"),
    OptionRow("similarity", "similarity", "jaccard", f"{ECHO}: SIM_jac (ours lower-cases and splits at words)"),
    OptionRow("similarity", "similarity", "embedding", f"{ECHO}: SIM_emb (they rescale cosine to [0, 1])"),
    OptionRow("similarity", "similarity", "levenshtein", f"{ECHO}: Levenshtein ratio (InDel, rapidfuzz)"),
    *(OptionRow("similarity", "k", k, f"{ECHO}: k in {{1, 5, 10, 25}}") for k in (1, 5, 10, 25)),
)


def config_name(attack: str, options: dict[str, object], defaults: dict[str, object]) -> str:
    """The attack name of one configuration in the options audit: the attack and the options that differ."""
    changed = [f"{k}_{str(v).lower()}" for k, v in sorted(options.items()) if defaults.get(k) != v]
    return "_".join([attack, *changed]) if changed else f"{attack}_default"


def row_config(row: OptionRow, defaults: dict[str, dict[str, object]]) -> str:
    """The configuration (attack name) a row is measured by."""
    return config_name(row.attack, {row.key: row.value}, defaults[row.attack])


def options_table(options: dict) -> str:
    """The Markdown table of docs/audit.md from the `options` figures of bench_audit_calibration.json."""
    lines = [
        "| option | reference it matches | mean AUC (6 cells) | AUC range | cells with bound > 1 | mean bound |",
        "|---|---|---|---|---|---|",
    ]
    for row in OPTION_ROWS:
        fig = options["configs"][row_config(row, options["defaults"])]
        default = " (default)" if options["defaults"][row.attack].get(row.key) == row.value else ""
        lines.append(
            f"| `{row.label}`{default} | {row.reference} | {fig['auc_mean']:.3f} | "
            f"{fig['auc_min']:.3f}-{fig['auc_max']:.3f} | {fig['cells_caught']} of {fig['cells']} | "
            f"{fig['eps_emp_lower_mean']:.3f} |"
        )
    return "\n".join(lines) + "\n"
