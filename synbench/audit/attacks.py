"""The attacks an audit runs: `attack=ngram` (one), `attack=[ngram,similarity]` (several), each under its name.

Each built-in attack config puts itself under its own name (`# @package
attack.<name>`), so a list selects several without merging them and options
read `attack.<name>.<key>`. A third-party attack config written flat (its
`_plugin_` at the top of the `attack` node) still works alone, under its
plugin's name.
"""

from __future__ import annotations

from typing import Any, Mapping

from synbench.core import registry
from synbench.core.base import Attack
from synbench.core.errors import ConfigError

PLUGIN_KEY = "_plugin_"


def attacks_from_node(node: Mapping[str, Any]) -> dict[str, Attack]:
    """{name: attack} for the `attack` config node, in the order chosen."""
    if PLUGIN_KEY in node:
        nested = sorted(k for k, v in node.items() if isinstance(v, Mapping) and PLUGIN_KEY in v)
        if nested:
            raise ConfigError(
                f"the attack config mixes a flat attack ('{node[PLUGIN_KEY]}') with named ones "
                f"({', '.join(nested)}); put '# @package attack.{node[PLUGIN_KEY]}' at the top of its "
                "conf/attack yaml so that a list of attacks keeps them apart"
            )
        return {str(node[PLUGIN_KEY]): registry.create(Attack, node)}
    if not node:
        raise ConfigError(
            "task=audit needs an attack; choose one, e.g. attack=ngram, or several: attack=[ngram,similarity]"
        )
    for name, value in node.items():
        if not isinstance(value, Mapping) or PLUGIN_KEY not in value:
            raise ConfigError(
                f"attack.{name} is not an attack config (no '{PLUGIN_KEY}' key); choose attacks from "
                "conf/attack, e.g. attack=[ngram,similarity]"
            )
    return {str(name): registry.create(Attack, value) for name, value in node.items()}
