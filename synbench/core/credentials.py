"""No credentials in a config: a URL with `user:password@` in it is refused wherever a config value enters (the
command line, the composed config, an LM backend's node), because configs are saved (.hydra/, results.json, W&B).

A core helper: the CLI, the job's typed config and the LM backends each check
what they are given, so it sits below all of them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from synbench.core.errors import ConfigError

# A URL that carries credentials: scheme://user[:password]@host.
URL_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+@")


def credential_keys(value: Any, path: str = "") -> list[str]:
    """The config keys (dotted) whose values hold a URL with credentials; the values themselves are never returned."""
    if isinstance(value, str):
        return [path or "(value)"] if URL_USERINFO.search(value) else []
    if isinstance(value, Mapping):
        return [key for k, v in value.items() for key in credential_keys(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [key for i, v in enumerate(value) for key in credential_keys(v, f"{path}[{i}]")]
    return []


def check_no_credentials(value: Any, where: str = "the config") -> None:
    """Refuse a URL with `user:password@` in it: configs are saved (.hydra/, results.json, W&B); keys come from the
    environment."""
    keys = credential_keys(value)
    if keys:
        raise ConfigError(
            f"{', '.join(keys)} in {where} holds a URL with credentials (user:password@host); remove "
            "them from the URL and give the API key through the environment variable named by "
            "api_key_env (default OPENAI_API_KEY)"
        )
