"""The command line: the Hydra app (`app`, `python -m synbench`) and the sweep callback (`sweeps`), above the
tasks they run. Internal: plugin packages import `synbench.api`.
"""
