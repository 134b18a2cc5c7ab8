"""Hydra config groups of this plugin, found by synbench through `pkg://synbench_invisibleink.conf`."""
