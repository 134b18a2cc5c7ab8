"""The shared DP-SGD core: the Poisson sampling plan, its data loader, and making an optimizer private."""
