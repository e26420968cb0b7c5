"""``python -m ninfer_ir``: the ``ninfer`` command line."""
from .cli import main

raise SystemExit(main())
