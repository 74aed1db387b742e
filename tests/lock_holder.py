"""Hold the measuring lock for a while and print when it was held (for the lock-locality tests).

Usage: python tests/lock_holder.py LABEL SECONDS  ->  prints "LABEL START END" (time.monotonic, shared
by every process of the machine).
"""

import sys
import time

from specsweep.record.locks import measuring

label, seconds = sys.argv[1], float(sys.argv[2])
with measuring(sys.stderr, label):
    start = time.monotonic()
    time.sleep(seconds)
    print(label, start, time.monotonic(), flush=True)
