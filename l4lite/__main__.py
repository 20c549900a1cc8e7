"""Allow ``python -m l4lite``."""

from l4lite.cli import main

raise SystemExit(main())
