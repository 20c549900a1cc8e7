"""One module per CLI command; each has ``register(subparsers)`` and sets ``run`` on its parser."""
