"""The core layer: types and contracts (`base`, `corpus`), the noise source (`privacy`), the config schema
(`schema`), the generic plugin registry, atomic files, errors, progress and the quality gates.

Internal, like every package here but `synbench.api` and `synbench.testing`: plugin packages import the public
API, which re-exports what they need (pyproject.toml's import contracts hold this). Nothing here imports a job,
a plugin family or the CLI.
"""
