"""Built-in metric plugins: downstream utility (`utility`) and fidelity (`mauve`, `entities`, `length`, `labels`).

Each registers under the `synbench.metrics` entry-point group in setup.cfg and
is configured by one file in conf/metrics/. Fidelity metrics share
`common.FidelityMetric`, which also reports a real-vs-real reference value.
"""
