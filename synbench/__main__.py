"""`python -m synbench` and the `synbench` command: the app imported with Python's cyclic garbage collector off,
what the import made then frozen out of its reach (`gc.freeze`), and the app run.

The objects of Hydra's, OmegaConf's and SynBench's modules live as long as
the process: the collector's passes over them free nothing, and every full
pass while the config composes would walk them all again (the time it saves:
`make bench BENCH=cli_start`). Frozen, they are never walked; the collector
stays on for composing, sweeps and the job.
"""

import gc


def run() -> None:
    """Import the app with the collector off, freeze what the import made, then run it."""
    gc.disable()
    try:
        from synbench.cli.app import main
    finally:
        gc.freeze()
        gc.enable()
    main()


if __name__ == "__main__":
    run()
