"""``python -m specsweep.archive verify <archive>``: check an archive against its manifest."""

import sys

from specsweep.archive.archive import main

sys.exit(main())
