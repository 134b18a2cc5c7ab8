"""Empty and degenerate outputs are counted for every generator, never dropped."""

from __future__ import annotations

from synbench.core.quality import is_degenerate, output_health


def test_degenerate_texts_are_short_repetitive_or_not_words() -> None:
    assert is_degenerate("the the the the cat") and is_degenerate("ok ok") and is_degenerate("## 12 ;; 99 -- %%")
    assert not is_degenerate("") and not is_degenerate("the patient reports a mild headache after dose 2")


def test_output_health_counts_and_shares() -> None:
    health = output_health(["", "a a a a", "the patient reports a mild headache", "  "])
    assert health == {"n_empty": 2, "n_degenerate": 1, "empty_share": 0.5, "degenerate_share": 0.25}
