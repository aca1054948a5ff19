"""``python -m procflow.cli``: the same as the ``procflow`` command."""

from procflow.cli.app import main

raise SystemExit(main())
