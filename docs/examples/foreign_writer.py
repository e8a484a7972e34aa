#!/usr/bin/env python3
"""Writes to a SharedPrefs suite from a program that knows nothing of SharedPrefs, and loses nothing.

The protocol every writer of a suite follows (SharedPrefs does exactly this):
  1. Take flock(LOCK_EX) on the lock file .<suite>.plist.lock beside the suite.
  2. Read the suite file as it is now (it may be missing: an empty suite).
  3. Change only the keys you mean to change.
  4. Write the whole property list to a new temporary file in the same directory,
     .<suite>.plist.<random>.tmp, fsync it, and rename it over <suite>.plist.
  5. Release the lock (close the file).
A writer that skips the lock can undo the updates of writers that take it.

Usage: foreign_writer.py SUITE.plist KEY COUNT   (adds 1 to the integer KEY, COUNT times)
"""
import fcntl
import os
import plistlib
import secrets
import sys


def update(path, change):
    directory, name = os.path.split(os.path.abspath(path))
    lock = os.open(os.path.join(directory, f".{name}.lock"), os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o660)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, "rb") as f:
                values = plistlib.load(f)
        except FileNotFoundError:
            values = {}
        change(values)
        temporary = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
        with open(temporary, "xb") as f:
            plistlib.dump(values, f, fmt=plistlib.FMT_BINARY)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        os.close(lock)  # releases the lock


if __name__ == "__main__":
    path, key, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for _ in range(count):
        update(path, lambda values: values.__setitem__(key, values.get(key, 0) + 1))
