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
from typing import Any, Mapping

import yaml

from synbench.errors import ConfigError

FIELDS = {"random": ("{label}",), "rephrase": ("{text}", "{label}"), "fill_blanks": ("{masked}", "{label}")}
DEFAULT = "default"


@dataclass(frozen=True)
class Prompts:
    domain: str
    random: str
    rephrase: str
    fill_blanks: str
    system: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> "Prompts":
        unknown = sorted(set(data) - {"domain", "system", *FIELDS})
        missing = sorted({"domain", *FIELDS} - set(data))
        if unknown or missing:
            raise ConfigError(
                f"prompt set {where}: unknown keys {unknown}, missing keys {missing}; "
                f"a prompt file has domain, system (optional), {', '.join(FIELDS)}"
            )
        for key, needed in FIELDS.items():
            absent = [f for f in needed if f not in str(data[key])]
            if absent:
                raise ConfigError(f"prompt set {where}: template '{key}' must contain {', '.join(absent)}")
        return cls(
            str(data["domain"]),
            str(data["random"]),
            str(data["rephrase"]),
            str(data["fill_blanks"]),
            None if data.get("system") is None else str(data["system"]),
        )

    def render(self, kind: str, labels: tuple[str, ...], **fields: Any) -> tuple[str, str | None]:
        """(user turn, system turn) of template `kind` for a label set."""
        values = {"label": ", ".join(labels), "domain": self.domain, **fields}
        system = self.system.format(**values) if self.system else None
        return getattr(self, kind).format(**values), system


def load_prompts(name_or_node: str | Mapping[str, Any]) -> Prompts:
    """A prompt set: a mapping as is, a YAML path, or a name under conf/prompts/augpe/ (unknown names: `default`)."""
    if isinstance(name_or_node, Mapping):
        return Prompts.from_mapping(name_or_node, "(inline)")
    name = str(name_or_node)
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(
                f"prompt file {name} does not exist; give a YAML path or a name under conf/prompts/augpe/"
            )
        return Prompts.from_mapping(yaml.safe_load(path.read_text()), name)
    folder = resources.files("synbench.conf").joinpath("prompts", "augpe")
    source = folder.joinpath(f"{name}.yaml")
    if not source.is_file():
        source = folder.joinpath(f"{DEFAULT}.yaml")
    return Prompts.from_mapping(yaml.safe_load(source.read_text()), str(source))
