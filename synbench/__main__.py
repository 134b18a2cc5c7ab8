"""`python -m synbench` and the `synbench` command: the app's `main`, imported with Python's cyclic garbage
collector off.

Importing Hydra, OmegaConf and the app allocates objects that all stay alive:
the collector's passes over them would free nothing (see
`synbench.cli.app.collection_paused`, which keeps it off until the job starts).
"""

import gc


def run() -> None:
    """Import the app with the collector off, then run it."""
    gc.disable()
    try:
        from synbench.cli.app import main
    finally:
        gc.enable()
    main()


if __name__ == "__main__":
    run()
