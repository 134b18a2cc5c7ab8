from synbench.cli.app import main

main()
