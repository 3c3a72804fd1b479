"""``python -m nbcallback``: see :mod:`nbcallback.cli`."""
from nbcallback.cli import main

raise SystemExit(main())
