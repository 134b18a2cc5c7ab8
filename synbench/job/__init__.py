"""The job layer: one job from its typed description (`spec`) to its record on disk, above the core and below
every plugin family: the resumable work records (`resume`), the release policy (`release`), the results writer
(`results`), the job folder's lock (`lock`), how a failure is worded (`failures`), one generator run (`run`), the
tracker (`tracking`) and the lifecycle that ties them together (`lifecycle`).

Internal: plugin packages import `synbench.api`. The plugin families (generators, metrics, the audits) use
`run`, `resume` and `spec`, so nothing here imports a family, a task or the CLI.
"""
