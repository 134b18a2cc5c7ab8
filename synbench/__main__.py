from synbench.app import main

main()
