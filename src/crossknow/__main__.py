"""`python -m crossknow` runs the command line."""

from crossknow.cli.app import main

main()
