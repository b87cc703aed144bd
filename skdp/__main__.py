"""``python -m skdp``: the command-line main job."""

import sys

from ._cli import main

sys.exit(main())
