"""The data layer: every format loads to the same corpus, errors point at the fix, texts stay private."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from omegaconf import OmegaConf

from synbench.core import registry
from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.drugreview import DrugReviewDataset
from synbench.data.files import FileDataset
from synbench.data.hub import HuggingFaceDataset
from synbench.data.split import make_splits

FIXTURES = Path(__file__).parent / "fixtures"
CONF = Path(__file__).parents[1] / "conf" / "dataset"


def dataset_node(option: str) -> dict:
    """The `dataset` node Hydra composes for `dataset=<option>` (its YAML over the plugin's schema)."""
    from conftest import compose_config

    node = OmegaConf.to_container(compose_config([f"dataset={option}", "data_root=/data"]).dataset)
    assert isinstance(node, dict)
    return node


SENTIMENT = ["negative", "neutral", "positive"]
SECRET = "Patient Zelda Quibblesworth took 40mg"  # must never appear in an error message

EXPECTED_IDS = ("d1", "d2", "d3", "d4", "d5", "d6")
# as the files write them: a user's text is never HTML-decoded (only the built-in drug reviews' references are)
EXPECTED_TEXTS = (
    "The new dose worked well &amp; quickly.",
    "Headaches every day since I started.",
    "No change so far, I&#039;ll wait.",
    "Great relief within a week.",
    "Felt dizzy and sick.",
    "It is fine.",
)
EXPECTED_LABELS = (("positive",), ("negative",), ("neutral",), ("positive",), ("negative",), ("neutral",))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _parquet(tmp_path: Path, source: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / f"{source.stem}.parquet"
    pq.write_table(pa.Table.from_pylist(_records(source)), out)
    return out


def _jsonl(tmp_path: Path, records: list[dict], name: str = "train.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _files(train: Path, **kw) -> Splits:
    kw.setdefault("label_space", SENTIMENT)
    return FileDataset(name="t", train=str(train), eval=str(train), **kw).load(seed=0)


def _error(exc_type: type[Exception], train: Path, **kw) -> str:
    with pytest.raises(exc_type) as info:
        _files(train, **kw)
    message = str(info.value)
    assert SECRET not in message
    return message


# --- formats ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "tsv", "parquet"])
def test_every_file_format_gives_the_same_corpus(fmt: str, tmp_path: Path) -> None:
    path = _parquet(tmp_path, FIXTURES / "docs.jsonl") if fmt == "parquet" else FIXTURES / f"docs.{fmt}"
    splits = _files(path, id_field="id")
    assert (splits.train.ids, splits.train.texts, splits.train.labels) == (
        EXPECTED_IDS,
        EXPECTED_TEXTS,
        EXPECTED_LABELS,
    )
    assert splits.train.label_space == tuple(SENTIMENT)
    assert (splits.train.name, splits.eval.name) == ("t-train", "t-eval")


def test_huggingface_folder_maps_classlabel_ints_to_names(tmp_path: Path) -> None:
    import datasets

    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=SENTIMENT),
        }
    )
    records = _records(FIXTURES / "docs.jsonl")
    data = {
        "id": [r["id"] for r in records],
        "text": [r["text"] for r in records],
        "label": [SENTIMENT.index(r["label"]) for r in records],
    }
    ds = datasets.Dataset.from_dict(data, features=features)
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "dd"))
    splits = HuggingFaceDataset(name="t", path=str(tmp_path / "dd"), id_field="id", label_space=SENTIMENT).load(0)
    assert (splits.train.ids, splits.train.texts, splits.train.labels) == (
        EXPECTED_IDS,
        EXPECTED_TEXTS,
        EXPECTED_LABELS,
    )
    assert len(splits.eval) == 6

    ds.save_to_disk(str(tmp_path / "single"))  # one split only: eval is held out of train
    held = HuggingFaceDataset(name="t", path=str(tmp_path / "single"), eval_fraction=0.5, label_space=SENTIMENT).load(0)
    assert (len(held.train), len(held.eval)) == (3, 3)


def test_huggingface_multi_label_sequence_of_classlabel(tmp_path: Path) -> None:
    import datasets

    names = ["ADR", "EF", "WD"]
    labels = datasets.Sequence(datasets.ClassLabel(names=names))
    features = datasets.Features({"text": datasets.Value("string"), "labels": labels})
    ds = datasets.Dataset.from_dict({"text": ["a b", "c d"], "labels": [[0, 1], [2]]}, features=features)
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "dd"))
    splits = HuggingFaceDataset(
        name="m", path=str(tmp_path / "dd"), label_field="labels", multi_label=True, allow_inferred_label_space=True
    ).load(0)
    assert splits.train.labels == (("ADR", "EF"), ("WD",))
    assert splits.train.label_space == tuple(names)


@pytest.mark.parametrize("name", ["multi.jsonl", "multi.csv"])
def test_multi_label_lists_and_separated_strings(name: str) -> None:
    splits = _files(FIXTURES / name, multi_label=True, label_space=["ADR", "DI", "EF", "WD"])
    assert splits.train.labels == (("ADR", "EF"), ("WD",), ("EF",))
    assert splits.train.multi_label and splits.train.ids == ("t-train-0", "t-train-1", "t-train-2")


def test_inferred_label_space_is_sorted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):  # 3 labels for 6 documents is above N/10: allowed explicitly
        splits = _files(FIXTURES / "docs.jsonl", label_space=None, allow_inferred_label_space=True)
    assert splits.train.label_space == splits.eval.label_space == tuple(SENTIMENT)
    assert any("inferred" in r.message and "public" in r.message for r in caplog.records)


def _labelled(n: int, label: Callable[[int], str]) -> list[dict]:
    return [{"text": f"{SECRET} note {i}", "label": label(i)} for i in range(n)]


@pytest.mark.parametrize(
    ("records", "kw", "why"),
    [
        (_labelled(40, lambda i: f"{SECRET} note {i}"), {"label_field": "text"}, "40 labels for 40 training documents"),
        (
            _labelled(40, lambda i: ("positive", "negative", "neutral", "x" * 101)[i % 4]),
            {},
            "a label of 101 characters",
        ),
        (_labelled(40, lambda i: ("positive", "negative", "neutral", "mixed", "other")[i % 5]), {}, "5 labels for 40"),
    ],
)
def test_inferred_label_space_that_looks_like_text_is_refused(
    tmp_path: Path, records: list[dict], kw: dict, why: str
) -> None:
    """More labels than N/10, or a label over 100 characters: refused, naming the field and the fix, never a label."""
    path = _jsonl(tmp_path, records)
    message = _error(DataError, path, label_space=None, **kw)
    assert why in message and f"field {kw.get('label_field', 'label')!r}" in message
    assert "dataset.label_space" in message and "dataset.allow_inferred_label_space=true" in message
    allowed = _files(path, label_space=None, allow_inferred_label_space=True, **kw)
    assert len(allowed.train.label_space) >= 4  # the opt-in keeps the old behaviour


def test_inferred_label_space_within_the_limits_is_accepted(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, _labelled(40, lambda i: ("positive", "negative", "neutral", "mixed")[i % 4]))
    assert len(_files(path, label_space=None).train.label_space) == 4  # 4 <= 40/10


# --- errors ----------------------------------------------------------------------------

GOOD = {"text": SECRET, "label": "positive"}


@pytest.mark.parametrize(
    ("bad", "kw", "expected"),
    [
        ({"body": SECRET, "label": "positive"}, {}, ["line 2", "'text'", "dataset.text_field="]),
        ({"text": SECRET, "sentiment": "positive"}, {}, ["line 2", "'label'", "dataset.label_field="]),
        ({"text": "", "label": "positive"}, {}, ["line 2", "field 'text' is empty", "remove the record"]),
        ({"text": " \n\t ", "label": "positive"}, {}, ["line 2", "field 'text' is empty"]),
        ({"text": SECRET, "label": []}, {"multi_label": True}, ["line 2", "is empty (no label)"]),
        ({"text": SECRET, "label": "bogus"}, {}, ["line 2", "'label'", "'negative', 'neutral', 'positive'"]),
        ({"text": SECRET, "label": SECRET}, {}, ["line 2", "'label'", "dataset.label_field names the label field"]),
        ({"text": SECRET, "label": [SECRET, "x"]}, {}, ["line 2", "has 2 labels", "single-label"]),
        ({SECRET: SECRET, "label": "positive"}, {}, ["line 2", "no field 'text'", "it has 2 field(s)"]),
        (
            {"text": SECRET, "label": ["positive", "neutral"]},
            {},
            ["line 2", "single-label", "dataset.multi_label=true"],
        ),
        ({"text": SECRET, "label": "positive", "id": "x"}, {"id_field": "id"}, ["line 2", "'id'", "line 1"]),
    ],
)
def test_bad_records_name_file_line_and_fix_without_text(
    tmp_path: Path, bad: dict, kw: dict, expected: list[str]
) -> None:
    first = {**GOOD, "id": "x"} if "id_field" in kw else GOOD
    path = _jsonl(tmp_path, [first, bad, GOOD])
    message = _error(DataError, path, **kw)
    for part in [str(path), *expected]:
        assert part in message


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + '{"text": "' + SECRET + '", "label": positive}\n')
    message = _error(DataError, path)
    assert f"{path} line 3" in message and "not valid JSON" in message


def test_csv_errors_count_lines_across_quoted_newlines(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    path.write_text(f'text,label\n"{SECRET}\nsecond line",positive\n\n{SECRET},bogus\n')
    assert f"{path} line 5" in _error(DataError, path)
    path.write_text(f"text,label\n{SECRET}, unquoted,positive\n")
    assert f"{path} line 2: 3 CSV fields but the header has 2" in _error(DataError, path)


def test_missing_or_unset_files_say_which_key_to_set(tmp_path: Path) -> None:
    message = _error(DataError, tmp_path / "nope.jsonl")
    assert "nope.jsonl" in message and "dataset.train=" in message
    with pytest.raises(ConfigError, match="dataset.train=.*Access: DUA. Where to get it: ask the hospital"):
        FileDataset(name="n2", access="DUA", source="ask the hospital").load(0)
    odd = tmp_path / "train.txt"
    odd.write_text("x")
    assert "dataset.format" in _error(ConfigError, odd)


def test_hub_failure_says_how_to_work_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no internet")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as info:
        HuggingFaceDataset(name="z", path="org/some-dataset").load(0)
    for part in ["'org/some-dataset'", "save_to_disk", "dataset.path="]:
        assert part in str(info.value)


def test_hub_missing_split_lists_the_splits(tmp_path: Path) -> None:
    import datasets

    ds = datasets.Dataset.from_dict({"text": ["a"], "label": ["x"]})
    datasets.DatasetDict({"train": ds, "validation": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DataError, match="no split 'test'.*'train', 'validation'.*dataset.eval_split="):
        HuggingFaceDataset(name="z", path=str(tmp_path / "dd")).load(0)


# --- splitting -------------------------------------------------------------------------


def _corpus(n: int) -> Corpus:
    return Corpus.build([f"doc {i}" for i in range(n)], [["a"]] * n, ["a"], name="c")


def test_eval_fraction_split_is_deterministic_per_seed() -> None:
    kw = dict(name="c", eval_fraction=0.25, max_train=None, max_eval=None, min_eval_per_class=0)
    first, again, other = (make_splits(_corpus(100), None, seed=s, **kw) for s in (0, 0, 1))
    assert first == again and first.eval.ids != other.eval.ids
    assert (len(first.train), len(first.eval)) == (75, 25)
    assert set(first.train.ids).isdisjoint(first.eval.ids)


def test_max_train_and_max_eval_subsample_or_explain() -> None:
    kw = dict(name="c", eval_fraction=0.2, min_eval_per_class=0)
    splits = make_splits(_corpus(12), _corpus(10), seed=3, max_train=5, max_eval=4, **kw)
    assert (len(splits.train), len(splits.eval)) == (5, 4)
    with pytest.raises(DataError, match="'c' has 12 training documents but max_train=100.*dataset.max_train=12"):
        make_splits(_corpus(12), _corpus(3), seed=0, max_train=100, max_eval=None, **kw)
    with pytest.raises(DataError, match="leaves no eval"):
        make_splits(
            _corpus(2), None, name="c", seed=0, eval_fraction=0.1, max_train=None, max_eval=None, min_eval_per_class=0
        )


# --- the built-in corpus and the shipped configs ---------------------------------------


def test_drugreview_loads_clean_real_reviews() -> None:
    splits = DrugReviewDataset(label_space=SENTIMENT).load(0)
    assert (len(splits.train), len(splits.eval)) == (600, 379)
    assert splits.train.label_space == tuple(SENTIMENT)
    assert {ls[0] for ls in splits.train.labels} == set(SENTIMENT)
    texts = splits.train.texts + splits.eval.texts
    assert not any("&#039;" in t or "&amp;" in t or t.startswith('"') or t != t.strip() for t in texts)


def test_drugreview_condition_drops_unlabelled_rows() -> None:
    splits = DrugReviewDataset(label="condition", allow_inferred_label_space=True).load(0)
    assert 580 < len(splits.train) < 600 and 360 < len(splits.eval) < 379
    assert not any("</span>" in label for label in splits.train.label_space)


def test_drugreview_multilabel_is_the_rating_plus_condition_groups() -> None:
    """The constructed multi-label task: one rating per review, plus 0 to 2 condition groups from the public mapping."""
    node = dataset_node("drugreview_multilabel")
    splits = registry.create(DatasetLoader, node).load(0)
    train = splits.train
    assert train.multi_label and (len(train), len(splits.eval)) == (600, 379)
    assert all(sum(label in SENTIMENT for label in ls) == 1 for ls in train.labels + splits.eval.labels)
    sizes = Counter(len(ls) for ls in train.labels)
    assert set(sizes) == {1, 2, 3} and sizes[2] > sizes[1] > sizes[3]
    groups = node["condition_groups"]
    assert set(train.label_space) == set(SENTIMENT) | set(groups)
    with pytest.raises(DataError, match="not in the configured label space"):
        DrugReviewDataset(label_space=SENTIMENT, condition_groups={"womens_health": ["Birth Control"]}).load(0)


@pytest.mark.parametrize("path", sorted(CONF.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_dataset_config_builds_its_plugin(path: Path) -> None:
    node = dataset_node(path.stem)
    loader = registry.create(DatasetLoader, node)
    assert isinstance(loader, DatasetLoader) and loader.name == node["name"]


def test_the_default_task_has_a_public_label_space_fixed_in_its_config() -> None:
    """`make demo`'s task: six conditions written in the config (not read off the data); other reviews are dropped."""
    from conftest import compose_config
    from synbench.generators.dpgen.data import control_code

    cfg = compose_config()
    assert cfg.dataset.name == "drugreview_condition6" and cfg.dataset.label == "condition"
    space = list(cfg.dataset.label_space)
    assert len(space) == 6 and cfg.dataset.only_label_space is True
    assert space == OmegaConf.load(CONF / "drugreview_condition6.yaml").label_space  # the config's list, as written
    splits = registry.create(DatasetLoader, OmegaConf.to_container(cfg.dataset)).load(0)
    assert not splits.label_space_inferred and splits.train.label_space == tuple(space)
    # the source's 232 / 148 reviews, with 8 training reviews moved so that every condition has 10 eval reviews
    assert (len(splits.train), len(splits.eval)) == (224, 156) and cfg.dataset.min_eval_per_class == 10
    assert min(sum(ls[0] == label for ls in splits.eval.labels) for label in space) == 10
    assert {ls[0] for ls in splits.train.labels} == set(space) and {ls[0] for ls in splits.eval.labels} == set(space)
    # DP-Gen prompts with the dataset's wording of the label; the rating task keeps the authors' bare prefix
    assert control_code(("Depression",), cfg.generator.control_code) == "Condition: Depression\n\n"
    assert control_code(("positive",), compose_config(["dataset=drugreview"]).generator.control_code) == "positive\n\n"


def test_only_label_space_needs_a_label_list_and_control_codes_need_the_labels() -> None:
    from synbench.generators.dpgen.settings import check_control_code

    with pytest.raises(ConfigError, match="needs a label_space list"):
        DrugReviewDataset(label="condition", only_label_space=True)
    with pytest.raises(ConfigError, match="no {labels} placeholder"):
        check_control_code("Condition:\n\n")
    kept = DrugReviewDataset(label="condition", label_space=["Acne", "Pain"], only_label_space=True).load(0)
    assert {ls[0] for ls in kept.train.labels} == {"Acne", "Pain"} and len(kept.train) == 24 + 27
