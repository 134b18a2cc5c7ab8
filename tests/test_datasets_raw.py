"""The paper's datasets as their publishers ship them: readers of the original releases on fabricated fixtures,
splits pinned by the dataset (never by the job seed), hub sources pinned by revision, label spaces in the configs.

Every fixture here is made up by the test (real column names, sheet names, XML structure, gzip), never real data.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Callable

import pytest
from omegaconf import OmegaConf

import release_fixtures
from conftest import compose_config, run_cli, write_jsonl
from synbench.core import registry
from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, DataError
from synbench.data.split import make_splits

CONF = Path(__file__).parents[1] / "conf" / "dataset"
DRUGREVIEW = sorted(p.stem for p in CONF.glob("drugreview*.yaml"))
HUB = ("hoc", "dmsafn", "lc37fnd", "zstfns", "eurlex")  # AsyLex is read from its files (its own section)
# hub datasets for which no commit sha was found (docs/datasets.md, Revisions): they read the branch `main`
UNPINNED_HUB = ("dmsafn", "lc37fnd")


def loader(option: str, *overrides: str) -> DatasetLoader:
    """The dataset plugin `dataset=<option>` builds, with command-line `overrides` of its keys."""
    node = OmegaConf.to_container(compose_config([f"dataset={option}", *overrides]).dataset)
    assert isinstance(node, dict)
    return registry.create(DatasetLoader, node)


def same_eval_for_every_seed(dataset: DatasetLoader) -> Splits:
    """The splits of `dataset` under job seeds 0, 1 and 7, asserted identical (the eval set above all)."""
    first, *others = (dataset.load(seed) for seed in (0, 1, 7))
    for other in others:
        assert other.eval.ids == first.eval.ids and other.eval.texts == first.eval.texts
        assert other.train.ids == first.train.ids
    return first


# --- splits pinned by the dataset ------------------------------------------------------------------------------


@pytest.mark.parametrize("option", DRUGREVIEW)
def test_the_job_seed_never_moves_a_drugreview_split(option: str) -> None:
    same_eval_for_every_seed(loader(option, "dataset.max_train=50", "dataset.max_eval=40"))


def test_the_default_task_keeps_its_splits() -> None:
    """The kept demo results depend on drugreview_condition6's 224 private / 156 eval reviews (the source's 232 /
    148, topped up to 10 eval reviews per condition)."""
    splits = same_eval_for_every_seed(loader("drugreview_condition6"))
    assert (len(splits.train), len(splits.eval)) == (224, 156)


def test_min_eval_per_class_tops_up_the_eval_split_from_train_and_never_takes_more_than_half() -> None:
    """A minimum of 8: label a has 2 eval and 10 train documents, and only half of those (5) may move; label b has
    none in eval and 4 in train (2 move); label c has its 8. With groups, whole groups move together."""
    from synbench.core.corpus import Corpus
    from synbench.data.split import make_splits

    train = Corpus.build(
        [f"t{i}" for i in range(20)], [("a",)] * 10 + [("b",)] * 4 + [("c",)] * 6, ("a", "b", "c"), name="t"
    )
    eval_ = Corpus.build([f"e{i}" for i in range(10)], [("a",)] * 2 + [("c",)] * 8, ("a", "b", "c"), name="e")
    splits = make_splits(train, eval_, name="toy", seed=0, eval_fraction=0.2, max_train=None, max_eval=None,
                         min_eval_per_class=8)  # fmt: skip
    count = lambda corpus, label: sum(label in ls for ls in corpus.labels)  # noqa: E731
    assert [count(splits.eval, x) for x in "abc"] == [7, 2, 8]  # a: 2 + half of 10 = 7 < 8; b: half of 4
    assert [count(splits.train, x) for x in "abc"] == [5, 2, 6] and len(splits.eval) == 17
    assert not set(splits.train.ids) & set(splits.eval.ids)
    grouped = make_splits(train, None, name="toy", seed=0, eval_fraction=0.25, max_train=None, max_eval=None,
                          groups=[f"g{i // 2}" for i in range(20)], min_eval_per_class=3)  # fmt: skip
    in_eval = {int(i.split("-")[1]) // 2 for i in grouped.eval.ids}
    assert all(f"t-{2 * g}" in grouped.eval.ids and f"t-{2 * g + 1}" in grouped.eval.ids for g in in_eval)
    assert all(count(grouped.eval, x) >= 3 for x in "abc")


def test_a_held_out_split_moves_with_split_seed_only(tmp_path: Path) -> None:
    rows = [{"text": f"note {i} on dose {i % 5}", "label": ["a" if i % 2 else "b"]} for i in range(60)]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    files = ("files", f"dataset.train={train}", "dataset.label_space=[a,b]", "dataset.eval_fraction=0.25")
    first = same_eval_for_every_seed(loader(*files))
    assert (len(first.train), len(first.eval)) == (45, 15)
    moved = loader(*files, "dataset.split_seed=3").load(0)
    assert moved.eval.ids != first.eval.ids and len(moved.eval) == 15


def test_a_grouped_hold_out_keeps_each_group_on_one_side() -> None:
    """Known answer: 12 groups of 1 to 12 documents; whole groups are held out until a fifth of the documents is."""
    sizes = range(1, 13)
    groups = [f"patient-{g}" for g in sizes for _ in range(g)]
    corpus = Corpus.build([f"doc {i}" for i in range(len(groups))], [["a"]] * len(groups), ["a"], name="c")
    kw = dict(name="c", eval_fraction=0.2, max_train=None, max_eval=None, groups=groups, min_eval_per_class=0)
    splits = make_splits(corpus, None, seed=0, **kw)
    group_of = dict(zip(corpus.ids, groups))
    held = {group_of[i] for i in splits.eval.ids}
    assert held.isdisjoint(group_of[i] for i in splits.train.ids)
    assert len(splits.eval) == sum(int(g.split("-")[1]) for g in held) >= round(0.2 * len(groups))
    assert len(splits.train) + len(splits.eval) == len(groups) == 78
    assert make_splits(corpus, None, seed=0, **kw) == splits
    assert make_splits(corpus, None, seed=1, **kw).eval.ids != splits.eval.ids


# --- hub datasets: a pinned source and a label space -----------------------------------------------------------


@pytest.mark.parametrize("option", HUB)
def test_every_hub_dataset_pins_a_commit_unless_listed_unpinned_and_has_a_label_space(option: str) -> None:
    node = compose_config([f"dataset={option}"]).dataset
    assert node._plugin_ == "huggingface" and node.path
    if option in UNPINNED_HUB:  # honestly unpinned: pinning one means moving it off this list
        assert node.revision == "main"
    else:  # a full commit sha, never a branch or tag the repository can move
        assert re.fullmatch(r"[0-9a-f]{40}", node.revision), node.revision
    if node.label_space_from_features:  # EURLEX: the class names its release declares (test below)
        assert node.label_space is None
    else:
        assert node.label_space and len(set(node.label_space)) == len(node.label_space)
        assert set(node.label_map.values()) <= set(node.label_space)
    assert loader(option).name == option


def test_the_hub_load_passes_the_pinned_revision_and_records_the_commit_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The hub is asked for the config's commit, and the commit the load read is where `datasets` cached it
    (`<repo>/<config>/<version>/<commit sha>/`), so recording it asks the hub nothing more."""
    import datasets

    asked = {}
    sha = "89abcdef0123456789abcdef0123456789abcdef"
    cached = tmp_path / "cache" / "zeroshot___twitter-financial-news-sentiment" / "default" / "0.0.0" / sha
    rows = {"text": ["$AAPL falls", "$MSFT rises"], "label": [0, 1]}
    datasets.DatasetDict({split: datasets.Dataset.from_dict(rows) for split in ("train", "validation")}).save_to_disk(
        str(cached)
    )

    def load_dataset(path: str, subset: str | None = None, **options: object) -> datasets.DatasetDict:
        asked.update(path=path, **options)
        return datasets.load_from_disk(str(cached))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    splits = same_eval_for_every_seed(loader("zstfns"))
    assert asked["path"] == "zeroshot/twitter-financial-news-sentiment"
    assert asked["revision"] == "ccbe24de388e287beb92dd393a335c376b350ac3"
    assert splits.train.labels == (("Bearish",), ("Bullish",))  # the integer labels through the config's names
    assert splits.source_revision == sha
    local = loader("zstfns", f"dataset.path={cached}").load(0)  # a save_to_disk folder: no commit recorded
    assert local.source_revision is None and local.train.texts == splits.train.texts


def test_bigbio_class_names_map_to_the_hoc_label_space(tmp_path: Path) -> None:
    """A BigBIO-shaped HoC folder (lowercase ClassLabel names, "none") loads into the Title Case space and NULL."""
    import datasets

    names = [
        "evading growth suppressors",
        "tumor promoting inflammation",
        "none",
        "sustaining proliferative signaling",
    ]
    features = datasets.Features(
        {
            "document_id": datasets.Value("string"),
            "text": datasets.Value("string"),
            "label": datasets.Sequence(datasets.ClassLabel(names=names)),
        }
    )
    rows = {
        "document_id": ["1_0", "1_1", "2_0", "2_1"],
        "text": ["Cells grow.", "Nothing here.", "Inflamed.", "No class at all."],
        "label": [[0, 3], [2], [1], []],  # the hub conversion's empty list where the source said NULL
    }
    split = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"train": split, "test": split}).save_to_disk(str(tmp_path / "hoc"))
    splits = same_eval_for_every_seed(loader("hoc", f"dataset.path={tmp_path / 'hoc'}"))
    assert splits.train.labels == (
        ("Evading growth suppressors", "Sustaining proliferative signaling"),
        ("NULL",),
        ("Tumor promoting inflammation",),
        ("NULL",),
    )
    with pytest.raises(DataError, match="'label' is empty .*set dataset.unlabelled_label"):
        loader("hoc", f"dataset.path={tmp_path / 'hoc'}", "dataset.unlabelled_label=null").load(0)


def test_a_label_space_the_release_declares_is_public_not_inferred(tmp_path: Path) -> None:
    """EURLEX's label space is its label feature's class names, published metadata: no inference warning or flag,
    and a class no document holds is still in it."""
    import datasets

    concepts = ["100163", "100168", "100169"]
    features = datasets.Features(
        {"text": datasets.Value("string"), "labels": datasets.Sequence(datasets.ClassLabel(names=concepts))}
    )
    split = datasets.Dataset.from_dict(
        {"text": ["Regulation one.", "Directive two."], "labels": [[0], [0, 2]]}, features
    )
    datasets.DatasetDict({"train": split, "test": split}).save_to_disk(str(tmp_path / "eurlex"))
    splits = same_eval_for_every_seed(loader("eurlex", f"dataset.path={tmp_path / 'eurlex'}"))
    assert splits.train.label_space == tuple(concepts) and not splits.label_space_inferred
    assert splits.train.labels == (("100163",), ("100163", "100169"))


def lc37fnd_article(text: str, ticker: str, sentiment: object) -> dict[str, object]:
    """A made-up article with the fields of the release's README (FelixDrinkall/financial-news-dataset), a price
    field per mentioned ticker, and `sentiment` as given."""
    return {
        "authors": [],
        "date_publish": "2017-03-21 13:42:32",
        "description": f"{text} In short.",
        "language": "en",
        "maintext": text,
        "source_domain": "finance.yahoo.com",
        "title": text[:20],
        "url": "http://finance.yahoo.com/news/made-up.html",
        "mentioned_companies": [ticker],
        "industries": [7375],
        f"prev_day_price_{ticker}": 100.5,
        f"curr_day_price_{ticker}": 101.0,
        f"next_day_price_{ticker}": 99.25,
        "sentiment": sentiment,
        "emotion": {"neutral": 0.9, "joy": 0.1},
        "news_outlet": "finance.yahoo.com",
    }


def write_lc37fnd(folder: Path, years: dict[str, list[dict[str, object]]]) -> Path:
    """The release's layout (`<year>_processed.json.xz`, one JSON array per year) read into the save_to_disk folder
    docs/datasets.md describes: each year on its own (their per-ticker price columns differ), maintext + sentiment."""
    import lzma

    import datasets

    parts = []
    for year, articles in years.items():
        path = folder / "release" / f"{year}_processed.json.xz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(path, "wt", encoding="utf-8") as handle:
            json.dump(articles, handle)
        year_data = datasets.load_dataset("json", data_files=str(path), split="train")
        parts.append(year_data.select_columns(["maintext", "sentiment"]))
    datasets.concatenate_datasets(parts).save_to_disk(str(folder / "lc37fnd"))
    return folder / "lc37fnd"


def scores(negative: float, neutral: float, positive: float) -> dict[str, float]:
    return {"negative": negative, "neutral": neutral, "positive": positive}


def test_lc37fnd_labels_each_article_with_its_largest_sentiment_score(tmp_path: Path) -> None:
    """Our rule (the paper states none): the class with the largest score, a tie going to the first in label_space
    whatever order the scores are written in."""
    positive_first = {"positive": 0.4, "neutral": 0.4, "negative": 0.2}  # the keys in the reverse of label_space
    folder = write_lc37fnd(
        tmp_path,
        {
            "2017": [
                lc37fnd_article("Shares soar on record profit.", "GOOGL", scores(0.01, 0.38, 0.61)),
                lc37fnd_article("Bank misses estimates badly.", "JPM", scores(0.7, 0.2, 0.1)),
                lc37fnd_article("Board meets on Tuesday.", "GOOGL", scores(0.05, 0.9, 0.05)),
            ],
            "2018": [
                lc37fnd_article("Mixed quarter for retailer.", "WMT", positive_first),
                lc37fnd_article("Even odds for the merger.", "MSFT", scores(0.5, 0.0, 0.5)),
            ],
        },
    )
    splits = same_eval_for_every_seed(loader("lc37fnd", f"dataset.path={folder}"))
    assert splits.train.label_space == ("negative", "neutral", "positive") and not splits.label_space_inferred
    labelled = {text: labels for text, labels in by_id(splits).values()}
    assert labelled == {
        "Shares soar on record profit.": ("positive",),
        "Bank misses estimates badly.": ("negative",),
        "Board meets on Tuesday.": ("neutral",),
        "Mixed quarter for retailer.": ("neutral",),  # tie with positive: neutral comes first in label_space
        "Even odds for the merger.": ("negative",),  # tie with positive: negative comes first
    }


@pytest.mark.parametrize(
    ("sentiment", "refusal"),
    [
        ("positive", "holds a value of type str, not a mapping of class -> score .*label_from_scores=false"),
        ({"negative": "high", "neutral": "low", "positive": "low"}, "holds a class score that is not a number"),
        (None, "is empty"),  # the README: a value is null when unavailable
    ],
)
def test_lc37fnd_refuses_a_sentiment_that_is_not_scores(sentiment: object, refusal: str, tmp_path: Path) -> None:
    import datasets

    texts = ["Secret merger talks.", "Shares soar on record profit."]
    rows = {"maintext": texts, "sentiment": [sentiment, sentiment]}  # one type per column, as arrow stores it
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / "lc37fnd"))
    with pytest.raises(DataError, match=f"split 'train' row 0: field 'sentiment' {refusal}") as caught:
        loader("lc37fnd", f"dataset.path={tmp_path / 'lc37fnd'}").load(0)
    assert "Secret" not in str(caught.value) and "high" not in str(caught.value)


def test_a_score_rule_is_refused_on_a_multi_label_dataset() -> None:
    with pytest.raises(ConfigError, match="label_from_scores=true .* and multi_label=true"):
        loader("lc37fnd", "dataset.multi_label=true")


# --- MIMIC-III from its PhysioNet folder ----------------------------------------------------------------------

CHAPTERS = [str(label) for label in compose_config(["dataset=mimic"]).dataset.label_space]
INFECTIOUS, NERVOUS, CIRCULATORY, INJURY, SYMPTOMS = (CHAPTERS[i] for i in (0, 5, 6, 16, 15))


def by_id(splits: Splits) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every document of both splits: id -> (text, labels)."""
    return {
        doc_id: (text, labels)
        for corpus in (splits.train, splits.eval)
        for doc_id, text, labels in zip(corpus.ids, corpus.texts, corpus.labels)
    }


def test_mimic_reads_discharge_summaries_by_admission_with_icd9_chapters(tmp_path: Path) -> None:
    folder = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    splits = same_eval_for_every_seed(loader("mimic", f"dataset.data_dir={folder}"))
    docs = by_id(splits)
    # 36 admissions; the one whose codes are all V codes has no chapter and is dropped
    assert len(docs) == 35 and "admission-100020" not in docs
    assert (len(splits.train), len(splits.eval)) == (28, 7)
    text, labels = docs["admission-100010"]
    assert labels == (INFECTIOUS, CIRCULATORY)  # 0389, 4019; V4581 gives none
    assert text == release_fixtures.note_text(1, 100010, "Discharge summary")  # the report: no addendum, no ISERROR
    assert docs["admission-100031"][1] == (NERVOUS, CIRCULATORY)  # the E code gives no label
    assert docs["admission-100080"][1] == (INJURY,)
    earlier, report = docs["admission-100030"][0].split("\n\n", 1)  # two reports, in chart order
    assert earlier.startswith("Earlier report") and report.startswith("Admission Date")
    assert {label for _, ls in docs.values() for label in ls} == set(CHAPTERS)  # every chapter is reached
    assert not splits.label_space_inferred and splits.train.label_space == tuple(CHAPTERS)
    # a patient's admissions stay on one side: the groups are SUBJECT_IDs
    subject = {f"admission-{hadm}": s for s, hadm, _ in release_fixtures.ADMISSIONS}
    assert {subject[i] for i in splits.train.ids}.isdisjoint(subject[i] for i in splits.eval.ids)


def test_mimic_policies_are_the_configs(tmp_path: Path) -> None:
    """Addenda, the E-code label and the unlabelled policy change what is read, as their keys say."""
    folder = release_fixtures.write_mimic(tmp_path / "release", gzipped=False)  # gunzipped files, named by the keys
    plain = ("mimic", f"dataset.data_dir={folder}", "dataset.notes_file=NOTEEVENTS.csv")
    docs = by_id(
        loader(
            *plain,
            "dataset.diagnoses_file=DIAGNOSES_ICD.csv",
            "dataset.addenda=append",
            f"dataset.e_code_label='{INJURY}'",
            f"dataset.unlabelled_label='{SYMPTOMS}'",
        ).load(0)
    )
    assert docs["admission-100010"][0].endswith("\n\nADDENDUM: labs, late.")
    assert docs["admission-100031"][1] == (NERVOUS, CIRCULATORY, INJURY)
    assert docs["admission-100020"][1] == (SYMPTOMS,) and len(docs) == 36


MALFORMED = "the file is malformed; download it again, or re-export it with every text field quoted"


@pytest.mark.parametrize("fields", [12, 10])
def test_mimic_refuses_a_note_row_whose_field_count_is_not_the_headers(fields: int, tmp_path: Path) -> None:
    """A NOTEEVENTS row with a field too many (an unquoted comma) or too few would put TEXT in the wrong column:
    it is refused in one line naming the file and the line where the row starts, never quoting the row."""
    head: list[object] = [9100, 40, 100400, "2150-01-01", "", "", "Discharge summary", "Report", "", ""]
    text = f"Seen by {release_fixtures.SECRET}."
    row = [*head, "an unquoted comma", text] if fields == 12 else [*head[:9], text]
    folder = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4", extra_notes=[row])
    notes = folder / "NOTEEVENTS.csv.gz"
    with gzip.open(notes, "rt", encoding="utf-8", newline="") as f:
        content = f.read()
    line = content[: content.index("9100,")].count("\n") + 1
    with pytest.raises(DataError) as info:
        loader("mimic", f"dataset.data_dir={folder}").load(0)
    assert str(info.value) == f"{notes} line {line}: {fields} CSV fields but the header has 11; {MALFORMED}"
    assert release_fixtures.SECRET not in str(info.value)


@pytest.mark.parametrize(
    "damage, refusal",
    [
        ("empty gzip", "is empty (no header line); check that dataset.notes_file names the right file"),
        ("zero bytes", "is empty (no header line); check that dataset.notes_file names the right file"),
        (
            "plain CSV",
            "is not gzip-compressed though its name ends .gz; rename it without .gz and set "
            "dataset.notes_file to the new name",
        ),
        ("cut short", "is a damaged or incomplete gzip file; download it again (dataset.notes_file names it)"),
    ],
)
def test_mimic_names_a_notes_file_that_is_empty_or_not_gzip(damage: str, refusal: str, tmp_path: Path) -> None:
    folder = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    notes = folder / "NOTEEVENTS.csv.gz"
    packed = notes.read_bytes()
    damaged = {
        "empty gzip": gzip.compress(b""),
        "zero bytes": b"",
        "plain CSV": gzip.decompress(packed),
        "cut short": packed[: len(packed) // 2],
    }
    notes.write_bytes(damaged[damage])
    with pytest.raises(DataError) as info:
        loader("mimic", f"dataset.data_dir={folder}").load(0)
    assert str(info.value) == f"{notes} {refusal}"


def test_mimic_names_the_line_of_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    """A notes file saved in Latin-1 (a re-export) is refused at the line of its first such byte."""
    folder = release_fixtures.write_mimic(tmp_path / "release")
    notes = folder / "NOTEEVENTS.csv.gz"
    content = gzip.decompress(notes.read_bytes())
    at = content.index(b"discharged home")
    notes.write_bytes(gzip.compress(content[:at] + b"discharg\xe9" + content[at + len("discharged") :]))  # é
    line, line_start = content[:at].count(b"\n") + 1, content.rindex(b"\n", 0, at) + 1
    with pytest.raises(DataError) as info:
        loader("mimic", f"dataset.data_dir={folder}").load(0)
    byte = at - line_start + len("discharg") + 1
    assert str(info.value) == f"{notes} line {line}: byte {byte} of the line is not UTF-8; save the file as UTF-8"


def test_mimic_says_why_no_admission_has_a_label(tmp_path: Path) -> None:
    """Notes are there, but every admission's codes are V codes (no label by default), or no note is of the
    configured category: the message says which, with the keys to set, not that the file has no records."""
    folder = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4", v_codes_only=True)
    notes = folder / "NOTEEVENTS.csv.gz"
    with pytest.raises(DataError) as info:
        loader("mimic", f"dataset.data_dir={folder}").load(0)
    message = str(info.value)
    assert message.startswith(
        f"no admission of {notes} has a label: of its 36 admissions with a Discharge summary report, 36 have only "
        "diagnosis codes that give none (V / E codes while dataset.v_code_label / e_code_label are null"
    )
    assert f"and 0 have no row in {folder / 'DIAGNOSES_ICD.csv.gz'};" in message
    assert "has no records" not in message and "dataset.unlabelled_label" in message
    with pytest.raises(DataError) as info:
        loader("mimic", f"dataset.data_dir={folder}", "dataset.category=Radiology").load(0)
    assert str(info.value).startswith(
        f"{notes}: none of its 76 notes is a report (DESCRIPTION 'Report') of CATEGORY 'Radiology' with an HADM_ID"
    )
    labelled = loader("mimic", f"dataset.data_dir={folder}", f"dataset.v_code_label='{SYMPTOMS}'").load(0)
    assert len(labelled.train) + len(labelled.eval) == 36  # the key the message names makes them documents


# --- PsyTAR from its workbook -----------------------------------------------------------------------------------


def test_psytar_reads_the_sentence_labelling_sheet(tmp_path: Path) -> None:
    folder = release_fixtures.write_psytar(tmp_path / "psytar")
    splits = same_eval_for_every_seed(loader("psytar", f"dataset.data_dir={folder}"))
    docs = by_id(splits)
    assert len(docs) == 37  # 36 review sentences + one marked with spaces around its mark; unlabelled and blank dropped
    assert docs["zoloft.1-3"] == ("Stopping it gave me brain zaps.", ("ADR", "WD"))  # label-space order
    assert docs["lexapro.1-4"] == ("I was prescribed it for anxiety.", ("DI", "Others"))  # `others` marked 1
    assert docs["zoloft.9-3"][1] == ("ADR", "SSI")  # " * " marks, 0 does not, a column outside the map is ignored
    assert docs["zoloft.2-2"][0] == 'It helped my mood, "a lot" (review 2).'
    review = {doc_id: doc_id.rsplit("-", 1)[0] for doc_id in docs}  # a review's sentences stay on one side
    assert {review[i] for i in splits.train.ids}.isdisjoint(review[i] for i in splits.eval.ids)
    assert splits.train.label_space == ("ADR", "DI", "EF", "INF", "Others", "SSI", "WD")


def test_psytar_refuses_an_unknown_mark_without_quoting_the_sentence(tmp_path: Path) -> None:
    row = [
        "zoloft.7",
        1,
        f"My neighbour {release_fixtures.SECRET} said so.",
        "?",
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    folder = release_fixtures.write_psytar(tmp_path / "psytar", extra_rows=[row])
    with pytest.raises(DataError) as info:
        loader("psytar", f"dataset.data_dir={folder}").load(0)
    message = str(info.value)
    assert "sheet 'Sentence_Labeling' row 41 column 'ADR'" in message and "dataset.marks" in message
    assert release_fixtures.SECRET not in message and "zoloft" not in message


def test_psytar_reads_a_cell_of_spaces_as_empty(tmp_path: Path) -> None:
    """An indicator cell holding only a space is unmarked; a sentence cell holding only a space is no sentence."""
    rows = [
        ["zoloft.8", 1, "My sleep got worse.", " ", None, "!", None, None, None, None, " "],
        ["zoloft.8", 2, " ", "!", None, None, None, None, None, None, None],
    ]
    docs = by_id(loader("psytar", f"dataset.data_dir={release_fixtures.write_psytar(tmp_path / 'p', rows)}").load(0))
    assert docs["zoloft.8-1"] == ("My sleep got worse.", ("EF",)) and "zoloft.8-2" not in docs


# --- n2c2 2008 from its XML files -------------------------------------------------------------------------------


def n2c2_labels(splits: Splits) -> dict[str, set[str]]:
    """Every document of both splits: id -> its labels."""
    return {doc_id: set(labels) for doc_id, (_, labels) in by_id(splits).items()}


def fixture_labels(documents: range, source: str) -> dict[str, set[str]]:
    """The fixture's answer: the documents whose final `source` judgement marks a disease Y, with those diseases."""
    found = {str(d): release_fixtures.n2c2_labels(d, source) for d in documents}
    return {doc_id: labels for doc_id, labels in found.items() if labels}


def test_n2c2_reads_the_release_files_with_its_official_split(tmp_path: Path) -> None:
    """By default a disease is a label when its intuitive judgement is Y; judgement_source=textual reads the
    other source's judgements."""
    folder = release_fixtures.write_n2c2(tmp_path / "n2c2")
    splits = same_eval_for_every_seed(loader("n2c2_2008", f"dataset.data_dir={folder}"))
    train, test = n2c2_labels(Splits(splits.train, splits.train)), n2c2_labels(Splits(splits.eval, splits.eval))
    assert train == fixture_labels(range(1, 25), "intuitive") and len(train) == 14  # 10 with no Y are dropped
    assert test == fixture_labels(range(101, 113), "intuitive") and len(test) == 7  # the release's test files: eval
    assert train["7"] == {"Obesity"} and train["10"] == {"Diabetes"} and "6" not in train  # 6: textual Y only
    assert splits.train.texts[0] == release_fixtures.n2c2_doc(1)  # XML entities read back as written: "&deg" kept
    textual = n2c2_labels(loader("n2c2_2008", f"dataset.data_dir={folder}", "dataset.judgement_source=textual").load(0))
    assert textual == {**fixture_labels(range(1, 25), "textual"), **fixture_labels(range(101, 113), "textual")}
    assert textual["6"] == {"Asthma"} and "7" not in textual and len(textual) == 7 + 4


def test_n2c2_reads_text_in_cdata_as_another_export_writes_it(tmp_path: Path) -> None:
    folder = release_fixtures.write_n2c2(tmp_path / "n2c2")
    records = folder / "obesity_patient_records_test.xml"
    docs = "".join(
        f'<doc id="{d}"><text><![CDATA[{release_fixtures.n2c2_doc(d)}]]></text></doc>' for d in range(101, 113)
    )
    records.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<root><docs>{docs}</docs></root>\n')
    splits = loader("n2c2_2008", f"dataset.data_dir={folder}").load(0)
    assert splits.eval.texts[0] == release_fixtures.n2c2_doc(101) and len(splits.eval) == 7  # "&lt;" stays "&lt;"


def test_n2c2_a_later_judgement_replaces_an_earlier_one_of_its_document_disease_and_source(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The last addendum judges three diseases again, as the release's addenda do: an intuitive Y judged N is no
    label any more, an N judged Y becomes one, and a textual re-judgement leaves the intuitive labels alone. The
    log counts the judgements replaced and names no document."""
    folder = release_fixtures.write_n2c2(tmp_path / "n2c2")
    with caplog.at_level("INFO", logger="synbench.data.n2c2"):
        intuitive = n2c2_labels(loader("n2c2_2008", f"dataset.data_dir={folder}").load(0))
    assert "3" not in intuitive and intuitive["4"] == {"Obesity"} and intuitive["9"] == {"Obesity"}
    logged = "\n".join(caplog.messages)
    assert "2 train intuitive judgements were overridden by a later judgement" in logged and "eval" not in logged
    caplog.clear()
    with caplog.at_level("INFO", logger="synbench.data.n2c2"):
        textual = n2c2_labels(
            loader("n2c2_2008", f"dataset.data_dir={folder}", "dataset.judgement_source=textual").load(0)
        )
    assert "9" not in textual and textual["3"] == {"Asthma"}  # its Asthma judged N again; doc 3's Asthma stays
    assert "1 train textual judgements were overridden by a later judgement" in "\n".join(caplog.messages)


def test_n2c2_finds_the_test_judgements_in_either_layout(tmp_path: Path) -> None:
    """Test judgements in one file or in one file per source both load with no override, to the same eval set."""
    one = loader("n2c2_2008", f"dataset.data_dir={release_fixtures.write_n2c2(tmp_path / 'one')}").load(0)
    folder = release_fixtures.write_n2c2(tmp_path / "by-source", test_by_source=True)
    assert not (folder / "obesity_standoff_annotations_test.xml").exists()
    split = same_eval_for_every_seed(loader("n2c2_2008", f"dataset.data_dir={folder}"))
    assert (split.eval.ids, split.eval.texts, split.eval.labels) == (one.eval.ids, one.eval.texts, one.eval.labels)
    textual = loader("n2c2_2008", f"dataset.data_dir={folder}", "dataset.judgement_source=textual").load(0)
    assert n2c2_labels(Splits(textual.eval, textual.eval)) == fixture_labels(range(101, 113), "textual")
    (folder / "obesity_standoff_annotations_test_intuitive.xml").unlink()  # the default source's file is gone
    with pytest.raises(DataError) as info:
        loader("n2c2_2008", f"dataset.data_dir={folder}").check_source()
    assert str(info.value) == (
        f"dataset 'n2c2_2008': '{folder}' holds neither obesity_standoff_annotations_test.xml nor "
        "obesity_standoff_annotations_test_intuitive.xml (the test judgements, dataset.judgement_source=intuitive); "
        "set dataset.data_dir to the n2c2 2008 obesity folder that holds one, or dataset.test_annotations to the "
        "files there"
    )


def test_n2c2_refuses_a_judgement_it_cannot_read(tmp_path: Path) -> None:
    folder = release_fixtures.write_n2c2(tmp_path / "n2c2", test_by_source=True)
    textual_only = "dataset.test_annotations=[obesity_standoff_annotations_test_textual.xml]"
    with pytest.raises(DataError, match=r"no judgement has source='intuitive'; set dataset.judgement_source"):
        loader("n2c2_2008", f"dataset.data_dir={folder}", textual_only).load(0)
    annotations = folder / "obesity_standoff_annotations_test_intuitive.xml"
    annotations.write_text(annotations.read_text().replace('judgment="N"', 'judgment="No"', 1))
    with pytest.raises(DataError, match=r"judgement number \d+: its judgment attribute is not one of Y, N, Q, U"):
        loader("n2c2_2008", f"dataset.data_dir={folder}").load(0)
    with pytest.raises(ConfigError, match=r"dataset.judgement_source='both' is not one of textual, intuitive"):
        loader("n2c2_2008", "dataset.judgement_source=both")


# --- AsyLex from its hub repository's files ----------------------------------------------------------------------
# The layout of clairebarale/AsyLex: outcome_train_test/{train_dataset_silver,test_dataset_gold}.csv
# (decisionID;decision_outcome) and determination_label_extracted_sentences.csv
# (decisionID;extracted_sentences_determination, a Python list literal per row, several rows per decision), all
# written by the authors with pandas' to_csv(sep=";"), as the fixture is. Every decision and sentence is made up.

ASYLEX_SHA = "0123456789abcdef0123456789abcdef01234567"
ASYLEX_SECRET = "Claimant Ophelia Brandywhistle"  # made up: never in a message, a log or a manifest
ASYLEX_SILVER = {101: 0, 102: 1, 103: 0, 104: 2, 105: 1, 106: 0, 107: 1, 201: 1}  # 106: no rows; 107: "[]"
ASYLEX_GOLD = {201: 1, 202: 0, 203: 1, 204: 0}  # 201 is also silver; 204 has no rows
ASYLEX_ROWS = [  # (decisionID, the sentences of one row) in file order; 101 has two rows and one repeated row
    (101, [f"{ASYLEX_SECRET} is not a Convention refugee.", "The claim is rejected."]),
    (102, ["The panel's finding: the claimant is a person in need of protection; the claim is allowed."]),
    (101, ["The claimant lacks credibility."]),
    (101, ["The claimant lacks credibility."]),
    (103, ["The claim is rejected for lack of credible evidence."]),
    (104, ["The panel cannot determine the outcome."]),
    (105, ["The claim for refugee protection is accepted."]),
    (107, []),
    (201, ["The claim is accepted."]),
    (202, ["The Refugee Protection Division rejects the claim."]),
    (203, ["The claimant is a Convention refugee."]),
]


def write_asylex(
    folder: Path, rows: list[tuple[object, object]] = ASYLEX_ROWS, gold_ids_as_floats: bool = False
) -> Path:
    """The three files of the repository at `folder`, as pandas writes them (a list cell as its str())."""
    import pandas as pd

    (folder / "outcome_train_test").mkdir(parents=True)
    silver = pd.DataFrame({"decisionID": list(ASYLEX_SILVER), "decision_outcome": list(ASYLEX_SILVER.values())})
    silver.to_csv(folder / "outcome_train_test" / "train_dataset_silver.csv", sep=";", index=False)
    gold_ids = [float(d) if gold_ids_as_floats else d for d in ASYLEX_GOLD]
    gold = pd.DataFrame({"decisionID": gold_ids, "decision_outcome": list(ASYLEX_GOLD.values())})
    gold.to_csv(folder / "outcome_train_test" / "test_dataset_gold.csv", sep=";", index=False)
    sentences = pd.DataFrame(
        {"decisionID": [d for d, _ in rows], "extracted_sentences_determination": [s for _, s in rows]}
    )
    sentences.to_csv(folder / "determination_label_extracted_sentences.csv", sep=";", index=False)
    return folder


@pytest.mark.parametrize("gold_ids_as_floats", [False, True])
def test_asylex_joins_its_sentences_to_the_outcomes_and_keeps_eval_out_of_train(
    gold_ids_as_floats: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No user code: the folder as published; gold decisions leave train, decisions without sentences are dropped,
    both counted in the log without an id; no eval document is a training document."""
    folder = write_asylex(tmp_path / "AsyLex", gold_ids_as_floats=gold_ids_as_floats)
    with caplog.at_level("INFO", logger="synbench.data.asylex"):
        splits = same_eval_for_every_seed(loader("asylax", f"dataset.data_dir={folder}"))
    assert splits.train.ids == ("101", "102", "103", "104", "105") and splits.eval.ids == ("201", "202", "203")
    assert splits.train.texts[0] == (
        f"{ASYLEX_SECRET} is not a Convention refugee. The claim is rejected. The claimant lacks credibility."
    )
    assert splits.train.texts[1] == ASYLEX_ROWS[1][1][0]  # a `;` and a quote inside a sentence, as written
    assert splits.train.labels == (("reject",), ("granted",), ("reject",), ("uncertain",), ("granted",))
    assert splits.eval.labels == (("granted",), ("reject",), ("granted",))
    assert not set(splits.eval.texts) & set(splits.train.texts) and not set(splits.eval.ids) & set(splits.train.ids)
    assert splits.source_revision is None  # a folder of no snapshot layout names no commit
    logged = "\n".join(caplog.messages)
    for count in ("dropped 2 train decisions", "dropped 1 eval decisions", "removed 1 silver", "read 1 repeated"):
        assert count in logged
    assert ASYLEX_SECRET not in logged and not re.search(r"\b(10[1-7]|20[1-4])\b", logged)


def test_asylex_from_its_hub_id_reads_the_snapshot_at_the_pinned_revision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`dataset=asylax` alone: the three files fetched at the config's commit (the card's configs never read), and
    the commit of the snapshot folder recorded."""
    import huggingface_hub

    snapshot = write_asylex(tmp_path / "hub" / "datasets--clairebarale--AsyLex" / "snapshots" / ASYLEX_SHA)
    asked: dict[str, object] = {}

    def snapshot_download(**options: object) -> str:
        asked.update(options)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    node = compose_config(["dataset=asylax"]).dataset
    assert node._plugin_ == "asylex" and re.fullmatch(r"[0-9a-f]{40}", node.revision)
    assert set(node.label_map.values()) == set(node.label_space) == {"reject", "granted", "uncertain"}
    splits = loader("asylax").load(0)
    assert asked["repo_id"] == "clairebarale/AsyLex" and asked["repo_type"] == "dataset"
    assert asked["revision"] == node.revision and set(asked["allow_patterns"]) == {
        "outcome_train_test/train_dataset_silver.csv",
        "outcome_train_test/test_dataset_gold.csv",
        "determination_label_extracted_sentences.csv",
    }
    assert splits.source_revision == ASYLEX_SHA and len(splits.train) == 5 and len(splits.eval) == 3

    def offline(**options: object) -> str:
        raise ConnectionError("no internet")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(DataError, match=r"snapshot_download\('clairebarale/AsyLex'.*dataset.data_dir=/some/folder"):
        loader("asylax").load(0)


@pytest.mark.parametrize("cell", ["['unterminated", "[1, 2]", "{'sentence': 'x'}", "The claim is rejected."])
def test_asylex_refuses_a_malformed_sentences_cell_in_one_line(cell: str, tmp_path: Path) -> None:
    rows = [*ASYLEX_ROWS[:2], (103, f"{ASYLEX_SECRET} {cell}" if cell[0] not in "[{" else cell), *ASYLEX_ROWS[4:]]
    folder = write_asylex(tmp_path / "AsyLex", rows)
    with pytest.raises(DataError) as info:
        loader("asylax", f"dataset.data_dir={folder}").load(0)
    message = str(info.value)
    assert message.startswith(f"{folder / 'determination_label_extracted_sentences.csv'} line 4: column ")
    assert "\n" not in message and ASYLEX_SECRET not in message and cell not in message


def test_asylex_parses_only_the_cells_of_its_decisions(tmp_path: Path) -> None:
    """A row of a decision in neither outcome file (the authors' pipeline wrote `no_match_filename` rows) is not
    a document, and its cell is never read."""
    folder = write_asylex(tmp_path / "AsyLex", [*ASYLEX_ROWS, ("no_match_filename", "['unterminated")])
    assert len(loader("asylax", f"dataset.data_dir={folder}").load(0).train) == 5


def test_asylex_names_the_key_of_a_missing_file_or_release(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"set dataset.data_dir=<the AsyLex .* or dataset.path=<its hub id>"):
        loader("asylax", "dataset.path=null").check_source()
    folder = write_asylex(tmp_path / "AsyLex")
    (folder / "determination_label_extracted_sentences.csv").unlink()
    with pytest.raises(DataError, match=r"does not exist; .* or dataset.sentences_file to its name there"):
        loader("asylax", f"dataset.data_dir={folder}").check_source()


def test_asylex_prepares_from_its_folder_through_the_cli(tmp_path: Path) -> None:
    folder = write_asylex(tmp_path / "AsyLex")
    out = tmp_path / "out"
    proc = run_cli(["task=prepare", "dataset=asylax", f"dataset.data_dir={folder}", f"output_root={out}"], cwd=tmp_path)
    train = [json.loads(line) for line in next(out.rglob("train.jsonl")).read_text().splitlines()]
    test = [json.loads(line) for line in next(out.rglob("test.jsonl")).read_text().splitlines()]
    assert len(train) == 5 and len(test) == 3
    assert not {row["text"] for row in test} & {row["text"] for row in train}
    manifest = next(out.rglob("manifest.json")).read_text()
    for text in (proc.stdout, proc.stderr, manifest):
        assert ASYLEX_SECRET not in text and "Convention refugee" not in text


# --- a release that is not there ---------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["mimic", "psytar", "n2c2_2008"])
def test_a_missing_release_names_the_key_to_set(option: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"dataset '{option}' needs its release: set dataset.data_dir="):
        loader(option).check_source()
    with pytest.raises(DataError, match=r"does not exist; set dataset.data_dir to the .* folder that holds it"):
        loader(option, f"dataset.data_dir={tmp_path}").check_source()


@pytest.mark.parametrize(
    "option, write",
    [
        ("mimic", release_fixtures.write_mimic),
        ("psytar", release_fixtures.write_psytar),
        ("n2c2_2008", release_fixtures.write_n2c2),
    ],
)
def test_a_release_folder_runs_the_benchmark_through_the_cli(
    option: str, write: Callable[[Path], Path], tmp_path: Path
) -> None:
    """`dataset=<id> dataset.data_dir=<the folder as published>`: no conversion code of the user's."""
    folder = write(tmp_path / "release")
    out = tmp_path / "out"
    args = [f"dataset={option}", f"dataset.data_dir={folder}", "generator=copy", "eps=inf", "metrics=[utility]"]
    run_cli([*args, "classifier=tfidf", "tracking=none", f"output_root={out}"], cwd=tmp_path)
    results = json.loads(next(out.rglob("results.json")).read_text())
    assert results["status"] == "complete" and results["dataset"] == option
    assert results["utility"]["f1_micro"] > 0
    assert release_fixtures.SECRET not in json.dumps(results) and "admission-" not in json.dumps(results)


def test_a_sweep_without_its_data_fails_once_before_any_job(tmp_path: Path) -> None:
    """The headline sweep on MIMIC-III without the release: one line naming the dataset, what is missing and the
    key to set, and no job started (no output folder)."""
    out = tmp_path / "out"
    sweep = ["-m", "generator=dpgen", "dataset=mimic", "eps=1,2,4", "tracking=none", f"output_root={out}"]
    proc = run_cli(sweep, cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert errors == [proc.stderr.strip()] and len(errors) == 1
    assert errors[0].startswith("synbench: error: dataset 'mimic' needs its release: set dataset.data_dir=")
    assert not out.exists() and "sweep job" not in proc.stdout + proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli([*sweep, f"dataset.data_dir={empty}"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and not out.exists()
    assert f"'{empty / 'NOTEEVENTS.csv.gz'}' does not exist" in proc.stderr and "dataset.notes_file" in proc.stderr


# --- task=prepare: the same data for every user ----------------------------------------------------------------


@pytest.mark.slow
def test_prepare_writes_the_splits_and_a_manifest_of_counts_only(tmp_path: Path) -> None:
    folder = release_fixtures.write_mimic(tmp_path / "mimic-iii-clinical-database-1.4")
    out = tmp_path / "out"
    proc = run_cli(["task=prepare", "dataset=mimic", f"dataset.data_dir={folder}", f"output_root={out}"], cwd=tmp_path)
    prepared = out / "prepared" / "mimic"
    manifest = json.loads((prepared / "manifest.json").read_text())
    printed = proc.stdout[proc.stdout.index('{\n  "dataset"') : proc.stdout.rindex("}") + 1]
    assert json.loads(printed) == manifest  # printed as written
    assert manifest["splits"]["train"]["documents"] == 28 and manifest["splits"]["eval"]["documents"] == 7
    assert manifest["label_space"] == CHAPTERS and manifest["split_seed"] == 0
    assert sum(manifest["splits"]["eval"]["labels"].values()) >= 7
    for text in (proc.stdout, (prepared / "manifest.json").read_text()):  # counts only: no text, no id
        assert release_fixtures.SECRET not in text and "admission-" not in text and "Admission Date" not in text
    # the prepared files read back (the paper experiments' data_root layout) are the release's splits
    raw = loader("mimic", f"dataset.data_dir={folder}").load(0)
    back = loader("mimic", f"dataset.train={prepared / 'train.jsonl'}", f"dataset.eval={prepared / 'test.jsonl'}").load(
        0
    )
    for split in ("train", "eval"):
        assert getattr(back, split).texts == getattr(raw, split).texts
        assert getattr(back, split).labels == getattr(raw, split).labels
    paper = compose_config(["+paper_dataset=mimic", f"data_root={out / 'prepared'}"]).dataset
    assert Path(paper.train) == prepared / "train.jsonl" and Path(paper.eval) == prepared / "test.jsonl"


def test_a_release_and_prepared_files_are_one_or_the_other(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sets both data_dir .* and train .*keep one"):
        loader("psytar", f"dataset.data_dir={tmp_path}", f"dataset.train={tmp_path / 'train.jsonl'}")
