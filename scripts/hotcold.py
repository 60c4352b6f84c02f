#!/usr/bin/env python3
"""A program rightsize was not written for: it writes a cold buffer of
random bytes first (about 3 s), then sweeps a small hot buffer over and over.

    python3 scripts/hotcold.py [HOT_MIB] [COLD_MIB] [SWEEPS] [START_S]

Defaults: 64 MiB hot, 192 MiB cold, 50000 sweeps (about 10 s of hot loop on
the project's 2-vCPU Intel Xeon VM), 3 s to write the cold buffer. The cold data does not compress (random bytes);
the hot set is touched one byte per page per sweep.
"""
import os
import sys
import time

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def main():
    hot_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    cold_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 192
    sweeps = int(sys.argv[3]) if len(sys.argv) > 3 else 50000
    start_s = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    cold = bytearray(cold_mib * MIB)
    # The start-up phase: the cold buffer, a MiB at a time, at a pace.
    pace = start_s / max(cold_mib, 1)
    for i in range(cold_mib):
        t = time.monotonic()
        cold[i * MIB:(i + 1) * MIB] = os.urandom(MIB)
        left = pace - (time.monotonic() - t)
        if left > 0:
            time.sleep(left)
    hot = bytearray(os.urandom(hot_mib * MIB))
    total = 0
    for _ in range(sweeps):
        # One byte of every page, in C: a strided copy of the hot buffer.
        total += sum(hot[::PAGE][:64])
        total += len(bytes(hot[::PAGE]))
    print(total, len(cold))


if __name__ == "__main__":
    main()
