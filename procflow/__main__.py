"""``python -m procflow``: the same as the ``procflow`` command."""

from procflow._cli.app import main

raise SystemExit(main())
