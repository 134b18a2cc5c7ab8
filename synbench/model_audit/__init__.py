"""Membership attacks on downstream classifiers (`task=model_audit`, the paper's table 4).

Does a classifier trained on DP synthetic text leak membership of the private
data more or less than one trained on the private data directly, with and
without DP-SGD? Four regimes train the same classifier (`config.REGIMES`),
an audited model and reference models each (`runs`), and three attacks
(`attacks`: logit, LiRA, RMIA) score the audit's targets; `summary` turns the
scores into AUC, TPR at low FPR and empirical epsilon with the audit's code.
"""
