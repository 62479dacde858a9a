"""``python -m rlhub`` runs the CLI."""

from rlhub.cli import main

main()
