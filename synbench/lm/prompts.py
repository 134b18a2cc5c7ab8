"""Prompt sets of the LM-prompting generators (AUG-PE, InvisibleInk): one YAML file per domain.

Shared by every generator that prompts an LM, so a plugin loads them through
`synbench.api.lm.load_prompts` rather than from a generator's package.
A prompt file (`conf/prompts/augpe/<name>.yaml`, or any YAML path) has
`domain` (public words for the kind of text), an optional `system` turn, and
three templates: `random` (RANDOM_API: `{label}`, `{domain}`), `rephrase`
(`{text}`, `{words}`, `{label}`, `{domain}`) and `fill_blanks` (`{masked}`,
`{words}`, `{label}`, `{domain}`). Templates see only synthetic text and
public label names, never a private document.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml
from omegaconf import MISSING

from synbench.core import schema
from synbench.core.errors import ConfigError

FIELDS = {"random": ("{label}",), "rephrase": ("{text}", "{label}"), "fill_blanks": ("{masked}", "{label}")}
DEFAULT = "default"


@dataclass(frozen=True)
class Prompts:
    """A prompt file's schema (`schema/prompts`): each key typed and the templates' placeholders checked, once."""

    domain: str = MISSING  # public words for the kind of text
    random: str = MISSING  # RANDOM_API: {label}, {domain}
    rephrase: str = MISSING  # {text}, {words}, {label}, {domain}
    fill_blanks: str = MISSING  # {masked}, {words}, {label}, {domain}
    system: Optional[str] = None  # the system turn; null = none

    def __post_init__(self) -> None:
        for key, needed in FIELDS.items():
            absent = [f for f in needed if f not in getattr(self, key)]
            if absent:
                raise ConfigError(f"prompts.{key}: the template must contain {', '.join(absent)}")

    def render(self, kind: str, labels: tuple[str, ...], **fields: Any) -> tuple[str, str | None]:
        """(user turn, system turn) of template `kind` for a label set."""
        values = {"label": ", ".join(labels), "domain": self.domain, **fields}
        system = self.system.format(**values) if self.system else None
        return getattr(self, kind).format(**values), system


def load_prompts(name_or_node: str | Mapping[str, Any]) -> Prompts:
    """A prompt set: a mapping as is, a YAML path, or a name under conf/prompts/augpe/ (unknown names: `default`)."""
    if isinstance(name_or_node, Mapping):
        return typed_prompts(name_or_node, "(inline)")
    name = str(name_or_node)
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(
                f"prompt file {name} does not exist; give a YAML path or a name under conf/prompts/augpe/"
            )
        return typed_prompts(yaml.safe_load(path.read_text()), name)
    folder = resources.files("synbench.conf").joinpath("prompts", "augpe")
    source = folder.joinpath(f"{name}.yaml")
    if not source.is_file():
        source = folder.joinpath(f"{DEFAULT}.yaml")
    return typed_prompts(yaml.safe_load(source.read_text()), str(source))


def typed_prompts(data: Any, where: str) -> Prompts:
    """`data` typed on the schema, an error naming the file it came from (a key alone would not say which)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"prompt set {where}: expected a mapping of domain, system, {', '.join(FIELDS)}")
    try:
        return schema.typed(Prompts, data, "prompts")
    except ConfigError as exc:
        raise ConfigError(f"prompt set {where}: {exc}") from None
