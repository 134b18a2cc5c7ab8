"""Pretraining contamination: detectors of text the public model has seen, and the ablation (task=contamination)."""
