"""`python -m kai_scheduler.cli`: the `kai` command, for when the console script is not on PATH."""

import sys

from kai_scheduler.cli import main

sys.exit(main())
