"""Hydra config groups of this plugin, found by synbench through `pkg://synbench_example_generator.conf`."""
