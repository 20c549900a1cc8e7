"""Allow ``python -m l4lite``."""

from l4lite.cli.main import main

raise SystemExit(main())
