"""The paper's settings as a contract: docs/paper-settings.md, composed and asserted row by row.

The page is the single list of what we attribute to the paper: each section
names the experiment overrides it is composed with, and each table row a
config key and the value it must have there. Nothing here repeats a value of
the page, so a changed config fails one row, and a changed page fails
against the configs. The Table 1 grid is also enumerated from its sweep
parameters as Hydra's basic sweeper does (405 jobs) and each job's settings
are checked against the page's rows for its dataset and generator; a slow
test runs a shrunk grid through submitit's local executor.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Iterator

import pytest
from hydra import compose, initialize_config_module
from omegaconf import DictConfig, ListConfig, OmegaConf

from conftest import REPO, run_cli
from synbench.cli.app import check_config_files
from synbench.core.errors import ConfigError

PAGE = REPO / "docs" / "paper-settings.md"
COMPOSED = re.compile(r"^Composed as: `([^`]+)`$")
ROW = re.compile(r"^\| ([^|]+?) \| `([^`]+)` \| `([^`]*)` \| ([^|]+?) \|$")
PAPER_EXPERIMENTS = sorted(
    {p.stem for p in (REPO / "conf" / "experiment").glob("paper_*.yaml")}
    | {"model_audit_paper_psytar", "model_audit_paper_dmsafn", "contamination_paper_psytar"}
)


@dataclass(frozen=True)
class Row:
    setting: str
    key: str
    value: str  # YAML text
    source: str


@dataclass(frozen=True)
class Section:
    title: str
    overrides: tuple[str, ...]
    rows: tuple[Row, ...]


def read_contract(path: Path = PAGE) -> list[Section]:
    """The page's sections that say how they are composed, with their rows; a row outside such a section is an error."""
    sections: list[Section] = []
    title, overrides, rows = "", None, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("## "):
            if overrides is not None:
                sections.append(Section(title, overrides, tuple(rows)))
            title, overrides, rows = line[3:].strip(), None, []
        elif match := COMPOSED.match(line):
            overrides = tuple(match.group(1).split())
        elif match := ROW.match(line):
            assert overrides is not None, f"{path}:{number}: a settings row in a section without a 'Composed as' line"
            rows.append(Row(*(g.strip() for g in match.groups())))
        elif line.startswith("| ") and "`" in line:
            raise AssertionError(f"{path}:{number}: a table row that is not `| setting | `key` | `value` | source |`")
    if overrides is not None:
        sections.append(Section(title, overrides, tuple(rows)))
    return sections


CONTRACT = read_contract()


def compose_job(overrides: tuple[str, ...] | list[str]) -> DictConfig:
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def expected(row: Row) -> Any:
    """The row's value as the config loader reads YAML (OmegaConf's resolver: 1e-4 is a float)."""
    return OmegaConf.create(f"v: {row.value}")["v"] if row.value else ""


def check(cfg: DictConfig, row: Row, where: str) -> None:
    actual = OmegaConf.select(cfg, row.key, throw_on_missing=True, default=KeyError)
    assert actual is not KeyError, f"{where}: {row.key} is not in the composed config ({row.setting})"
    if isinstance(actual, (DictConfig, ListConfig)):
        actual = OmegaConf.to_container(actual, resolve=True)
    want = expected(row)
    if isinstance(want, ListConfig):
        want = OmegaConf.to_container(want)
    if isinstance(actual, str):  # sweep parameters and rule strings ("1/N^2") are compared as written
        assert actual == row.value, f"{where}: {row.key} = {actual!r}, the paper's {row.setting} is {row.value!r}"
    elif isinstance(actual, float) or isinstance(want, float):
        assert actual == pytest.approx(want, rel=1e-12), f"{where}: {row.key} = {actual!r}, paper: {want!r}"
    else:
        assert actual == want, f"{where}: {row.key} = {actual!r}, the paper's {row.setting} is {want!r}"


def test_the_contract_covers_every_paper_experiment_in_at_least_30_rows() -> None:
    rows = [row for section in CONTRACT for row in section.rows]
    assert len(rows) >= 30 and all(section.rows for section in CONTRACT)
    composed = {o.split("=", 1)[1] for section in CONTRACT for o in section.overrides if o.startswith("+experiment=")}
    assert set(PAPER_EXPERIMENTS) <= composed, sorted(set(PAPER_EXPERIMENTS) - composed)
    paper_datasets = {p.stem for p in (REPO / "conf" / "paper_dataset").glob("*.yaml")}
    assert paper_datasets <= {s.title.removeprefix("Dataset ") for s in CONTRACT}  # a section per paper dataset
    assert all(row.source for row in rows)


@pytest.mark.parametrize("section", CONTRACT, ids=[s.title for s in CONTRACT])
def test_every_row_holds_in_its_composed_experiment(section: Section) -> None:
    cfg = compose_job(section.overrides)
    for row in section.rows:
        check(cfg, row, f"docs/paper-settings.md, {section.title} ({' '.join(section.overrides)})")


def test_a_changed_value_fails_its_row() -> None:
    """The check is not vacuous: the demo's DP-Gen (its lr and LoRA modules, as the demo option conf/demo/dpgen.yaml
    sets them) breaks the paper's rows."""
    dpgen = next(s for s in CONTRACT if s.title == "DP-Gen")
    demo = OmegaConf.load(REPO / "conf" / "demo" / "dpgen.yaml")
    modules = ",".join(demo.lora.target_modules)
    cfg = compose_job([*dpgen.overrides, f"generator.lr={demo.lr}", f"generator.lora.target_modules=[{modules}]"])
    for key in ("generator.lr", "generator.lora.target_modules"):
        with pytest.raises(AssertionError, match=re.escape(key)):
            check(cfg, next(r for r in dpgen.rows if r.key == key), "test")


# --- the Table 1 grid ------------------------------------------------------------------------------------------

GRID = ("+experiment=paper_table1", "data_root=/data")
GENERATOR_SECTIONS = {"dpgen": "DP-Gen", "augpe": "AUG-PE"}
# generator rows of the PsyTAR sections that follow the dataset or the authors' PsyTAR run, not the generator:
# in the grid they are checked against the job's own dataset instead
PER_DATASET = {
    "generator.max_seq_len",
    "generator.population",
    "generator.encoder.name",
    "generator.encoder.pretrained",
}


def grid_jobs(cfg: DictConfig) -> list[dict[str, str]]:
    """The jobs Hydra's basic sweeper launches for this config's sweep parameters, as {key: value} overrides."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    assert cfg.hydra.sweeper._target_ == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
    params = [f"{key}={value}" for key, value in cfg.hydra.sweeper.params.items()]
    batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(params), None)
    return [dict(o.split("=", 1) for o in job) for batch in batches for job in batch]


def rows_of(title: str, prefixes: tuple[str, ...]) -> Iterator[Row]:
    section = next(s for s in CONTRACT if s.title == title)
    return (r for r in section.rows if r.key.startswith(prefixes) and r.key not in PER_DATASET)


def check_pair(cfg: DictConfig, dataset: str, generator: str) -> None:
    """A grid job's settings: the page's rows for its dataset and its generator, and what follows the dataset."""
    where = f"paper_table1 job +paper_dataset={dataset} +paper_generator={generator}"
    assert cfg.delta is None and cfg.sweep == "paper_table1" and cfg.task.name == "benchmark", where
    for row in rows_of(f"Dataset {dataset}", ("dataset.", "classifier.", "encoder.")):
        check(cfg, row, where)
    assert cfg.generator._plugin_ == generator, where
    if generator in GENERATOR_SECTIONS:
        for row in rows_of(GENERATOR_SECTIONS[generator], ("generator.",)):
            check(cfg, row, where)
    if generator == "augpe":  # the votes embed with the dataset's encoder
        assert cfg.generator.encoder.name == cfg.encoder.name, where
        assert cfg.generator.max_new_tokens == cfg.dataset.max_length, where
    else:  # DP-Gen and DP-Diffusion train at the dataset's sequence length
        assert cfg.generator.max_seq_len == cfg.dataset.max_length, where


def test_the_table1_grid_is_405_jobs_each_at_its_dataset_and_generator_settings() -> None:
    """405 = 9 datasets x 3 generators x 5 eps x 3 seeds, enumerated as the sweeper does; every job's settings.

    A job differs from its (dataset, generator) pair only by the plain values eps and seed (no config interpolates
    them), so each of the 27 pairs is composed once and each job applies its own eps and seed to it, as Hydra's
    config loader applies a value override.
    """
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        grid = compose(config_name="config", overrides=list(GRID), return_hydra_config=True)
        jobs = grid_jobs(grid)
        datasets, generators = (
            {o: None for o in grid.hydra.sweeper.params[k].split(",")} for k in ("+paper_dataset", "+paper_generator")
        )
        eps, seeds = ["0.5", "1", "2", "4", "inf"], ["0", "1", "2"]
        assert len(jobs) == 405 == len(datasets) * len(generators) * len(eps) * len(seeds) and len(datasets) == 9
        combos = [(j["+paper_dataset"], j["+paper_generator"], j["eps"], j["seed"]) for j in jobs]
        assert len(set(combos)) == 405 and set(combos) == set(product(datasets, generators, eps, seeds))
        assert not any(
            re.search(r"\$\{(oc\.select:)?(eps|seed)\b", p.read_text()) for p in (REPO / "conf").rglob("*.yaml")
        )
        for dataset, generator in product(datasets, generators):
            cfg = compose(
                config_name="config", overrides=[*GRID, f"+paper_dataset={dataset}", f"+paper_generator={generator}"]
            )
            check_pair(cfg, dataset, generator)
            for job in (j for j in jobs if (j["+paper_dataset"], j["+paper_generator"]) == (dataset, generator)):
                for key in ("eps", "seed"):
                    OmegaConf.update(cfg, key, OmegaConf.create(f"v: {job[key]}")["v"], merge=True)
                assert float(cfg.eps) == float(job["eps"]) and cfg.seed == int(job["seed"]), job


# --- the grid on a real engine, at toy size ---------------------------------------------------------------------

TOY_DATASET = """# @package _global_
# A toy stand-in for one of the paper's datasets (tests/test_paper_settings.py), in the paper_dataset group.
defaults:
  - override /dataset: files
  - override /classifier: tfidf
  - override /encoder: minilm

dataset:
  name: {name}
  domain: medical
  train: {root}/{name}/train.jsonl
  eval: {root}/{name}/test.jsonl
  label_space: {labels}
  max_length: 24
"""


TOY_WORDS = {"toy_a": ("calm", "dizzy"), "toy_b": ("rested", "tired")}


def write_toy_dataset(root: Path, name: str, words: tuple[str, str]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    for split, count in (("train", 24), ("test", 12)):
        rows = [
            {"text": f"patient {i} felt {words[i % 2]} after the dose", "label": [words[i % 2]]} for i in range(count)
        ]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def toy_searchpath(root: Path) -> str:
    """The toy datasets under root/data and their paper_dataset configs under root/conf, and the override that
    adds that folder to the search path, as a user adds their own datasets to the grid."""
    conf = root / "conf" / "paper_dataset"
    conf.mkdir(parents=True)
    for name, words in TOY_WORDS.items():
        write_toy_dataset(root / "data", name, words)
        (conf / f"{name}.yaml").write_text(TOY_DATASET.format(name=name, root=root / "data", labels=list(words)))
    return f"hydra.searchpath=[file://{root / 'conf'}]"


def test_a_searchpath_folders_files_are_checked_as_the_job_composed_them(tmp_path: Path) -> None:
    """The job's check of its YAML files as written (`check_config_files`) finds a group option that only a
    `hydra.searchpath` folder has: it used Hydra's global config loader, whose repository never holds that
    override's folders (Hydra adds them to a copy per composition), so every job of the shrunk grid failed with
    "Could not find 'paper_dataset/toy_a'", with submitit's launcher or without. The file is read, not skipped:
    a value it writes as `1e400` is refused naming it."""
    job = [*GRID[:1], toy_searchpath(tmp_path), "+paper_dataset=toy_a", "+paper_generator=dpgen"]
    composed = compose_job(job)
    assert composed.dataset.name == "toy_a"
    check_config_files(composed, composed.hydra)
    toy_a = tmp_path / "conf" / "paper_dataset" / "toy_a.yaml"
    toy_a.write_text(f"{toy_a.read_text()}eps: 1e400\n")
    with pytest.raises(ConfigError, match=rf"{re.escape(str(toy_a))} line \d+: eps: 1e400 is too large for a float"):
        check_config_files(composed, composed.hydra)


@pytest.mark.slow
def test_a_shrunk_table1_runs_through_submitit_local(tmp_path: Path) -> None:
    """paper_table1 with two toy JSONL datasets, DP-Gen on SmolLM2 at the paper's lr and LoRA, eps {1, inf}, one seed,
    through `hydra/launcher=submitit_local`: each job pickled and run by submitit in its own process, as on SLURM."""
    pytest.importorskip(
        "hydra_plugins.hydra_submitit_launcher", reason="pip install '.[test]' (hydra-submitit-launcher)"
    )
    searchpath = toy_searchpath(tmp_path)
    out = tmp_path / "out"
    started = time.monotonic()
    proc = run_cli(
        [
            "-m",
            *GRID[:1],
            f"data_root={tmp_path / 'data'}",
            searchpath,
            "hydra/launcher=submitit_local",
            "hydra.launcher.timeout_min=30",
            "hydra.launcher.cpus_per_task=1",
            "+paper_dataset=toy_a,toy_b",
            "+paper_generator=dpgen",
            "eps=1,inf",
            "seed=0",
            "model=smollm2_135m",
            "generator.accelerator=cpu",
            "generator.precision=32-true",
            "generator.num_threads=1",
            "generator.epochs=1",
            "generator.batch_size=8",
            "generator.physical_batch_size=8",
            "generator.sample_batch_size=16",
            "generator.max_new_tokens=16",
            "task.n_synthetic=8",
            "metrics=[utility,length]",
            "tracking=none",
            f"output_root={out}",
        ],
        cwd=tmp_path,
        timeout=1800,
    )  # measured: 79 s on 2 shared cores, 579 s at load 11-14
    wall = time.monotonic() - started
    results = [json.loads(p.read_text()) for p in (out / "paper_table1").rglob("results.json")]
    assert sorted((r["dataset"], str(r["epsilon"])) for r in results) == [
        ("toy_a", "1.0"),
        ("toy_a", "inf"),
        ("toy_b", "1.0"),
        ("toy_b", "inf"),
    ], proc.stdout
    assert all(r["status"] == "complete" for r in results), [r.get("error") for r in results]
    assert list((out / "paper_table1" / ".submitit").glob("*/*_result.pkl"))  # submitit ran and pickled each job
    for r in results:  # the paper's DP-Gen settings travelled through submitit's pickles into each job
        generator = r["config"]["generator"]
        assert generator["lr"] == pytest.approx(1e-4) and len(generator["lora"]["target_modules"]) == 7
        assert r["generator"] == "dpgen" and r["utility"]["n_train"] == 8
        assert r["label_space_inferred"] is False and (r["epsilon"] == "inf" or r["epsilon_spent"] <= 1.0 + 1e-9)
    print(f"shrunk paper_table1 through submitit_local: {len(results)} jobs in {wall:.0f} s")
