"""`task=wandb_workspace`: a saved W&B view of a sweep, built with the `wandb-workspaces` library.

One job is one W&B run, grouped by its sweep (`synbench.job.tracking`); every
figure a job logs goes in one history row beside its nominal `eps`, so a
line plot with `eps` as its x-axis has one point per job, and with the runs
grouped by generator, one line per generator (the mean over seeds, min-max
band). The view filters the project's runs to the sweep's group and holds:

- F1 (macro and micro) and MAUVE against eps per generator;
- `eps_emp_lower` against eps with the line y = eps (the run's `eps` itself
  as a second series): a point above it is an audit violation;
- a runs table with the job description and the headline figures pinned.

With `task.mode=online` (default: the tracking mode) the view is saved to
W&B, which needs an API key (`WANDB_API_KEY` or `wandb login`). Either way
its spec, the JSON W&B stores for a view (what `Workspace.save` sends), is
written to `task.spec_file`, so an offline sweep's view can be checked or
saved later. Needs the `workspaces` extra (`pip install synbench[workspaces]`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from synbench.core import schema
from synbench.core.errors import ConfigError
from synbench.core.files import write_text_atomic
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task
from synbench.tasks.options import WandbWorkspaceOptions

# (panel title, metrics on the y-axis) of the view's sections, each against the runs' `eps`.
FIGURES = {
    "Utility and fidelity against eps (a line per generator: mean over seeds, min-max band)": (
        ("F1 macro against eps", ("utility/f1_macro",)),
        ("F1 micro against eps", ("utility/f1_micro",)),
        ("MAUVE against eps", ("fidelity/mauve",)),
    ),
    "Privacy audit: empirical epsilon against the nominal one": (
        (
            "eps_emp_lower against eps (the eps series is the line y = eps: above it is a violation)",
            ("audit/eps_emp_lower", "eps"),
        ),
    ),
}
PINNED = (
    "config:generator",
    "config:dataset",
    "config:eps",
    "config:seed",
    "summary:epsilon_spent",
    "summary:utility/f1_macro",
    "summary:fidelity/mauve",
    "summary:audit/eps_emp_lower",
)


def build(sweep: str, entity: str | None, project: str) -> Any:
    """The view of sweep `sweep` (its runs' W&B group) in `entity/project`, as a `wandb_workspaces` Workspace."""
    try:
        import wandb_workspaces.reports.v2 as wr
        import wandb_workspaces.workspaces as ws
    except ImportError:
        raise ConfigError(
            "task=wandb_workspace needs the wandb-workspaces library: pip install 'synbench[workspaces]'"
        ) from None
    sections = [
        ws.Section(
            name=name,
            is_open=True,
            panels=[
                wr.LinePlot(title=title, x="eps", y=list(metrics), groupby_aggfunc="mean", groupby_rangefunc="minmax")
                for title, metrics in panels
            ],
        )
        for name, panels in FIGURES.items()
    ]
    return ws.Workspace(
        entity=entity or "",
        project=project,
        name=f"SynBench sweep {sweep}",
        sections=sections,
        runset_settings=ws.RunsetSettings(
            filters=[ws.Metric("Group") == sweep],
            groupby=[ws.Config("generator")],
            pinned_columns=list(PINNED),
        ),
    )


def view_spec(workspace: Any) -> dict[str, Any]:
    """What W&B stores for the view: where it goes, its name, and its spec (the JSON `Workspace.save` uploads)."""
    view = workspace._to_model()  # the library's one serialisation of a view: `save` uploads exactly this spec
    return {
        "entity": view.entity,
        "project": view.project,
        "display_name": view.display_name,
        "spec": json.loads(view.spec.model_dump_json(by_alias=True, exclude_none=True)),
    }


def save(workspace: Any) -> str:
    """Save the view to W&B; its URL. Without an API key, one line saying how to give one."""
    import wandb

    try:
        api = wandb.Api()
    except wandb.errors.UsageError:  # raised before any request when no API key is configured
        raise ConfigError(
            "task=wandb_workspace with task.mode=online needs a W&B API key: set WANDB_API_KEY or run "
            "`wandb login` (task.mode=offline writes the view's spec to task.spec_file only)"
        ) from None
    if not workspace.entity:
        workspace.entity = api.default_entity
    return str(workspace.save().url)


class WandbWorkspaceTask(Task):
    """`task=wandb_workspace` (conf/task/wandb_workspace.yaml): a view of the sweep; writes no results.json."""

    options = WandbWorkspaceOptions
    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        options = schema.typed(WandbWorkspaceOptions, config.task, "task")
        workspace = build(config.sweep, options.entity, options.project)
        path = Path(options.spec_file)
        write_text_atomic(path, json.dumps(view_spec(workspace), indent=2) + "\n")
        print(f"wandb_workspace: spec {path}")
        if options.mode == "online":
            print(f"wandb_workspace: saved {save(workspace)}")
