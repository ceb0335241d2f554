"""``python -m rl_contracts.cli``."""

import sys

from . import main

sys.exit(main())
