"""``python -m neswap_core``: see ``neswap_core/cli.py``."""

import sys

from .cli import main

sys.exit(main())
