#!/usr/bin/env python3
"""The GPU code objects inside host files, for comparing builds.

    code_objects.py TARGET FILE...

hipcc puts each translation unit's device code in a clang offload bundle (the
.hip_fatbin section of the object; a static archive holds its members' and a
linked library the bundles of every object linked in, byte for byte). This
scans each FILE for bundles (magic "__CLANG_OFFLOAD_BUNDLE__", then a 64-bit
count and, per entry, 64-bit offset, size and triple length, the triple; the
offsets count from the magic) and prints one line per entry whose triple ends
in TARGET (e.g. gfx906): FILE, sha256 and size of the code object. A
compressed bundle (magic "CCOB") is printed as such: its code objects cannot
be compared without decompressing, and the caller treats them as not found.
Python 3 standard library only.
"""
import hashlib
import struct
import sys

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED = b"CCOB"


def bundles(data, target):
    """(sha256, size) of every TARGET code object in the bundles of data."""
    found, pos = [], data.find(MAGIC)
    while pos >= 0:
        try:
            (count,) = struct.unpack_from("<Q", data, pos + len(MAGIC))
            at = pos + len(MAGIC) + 8
            for _ in range(count):
                off, size, tlen = struct.unpack_from("<QQQ", data, at)
                triple = data[at + 24:at + 24 + tlen].decode("ascii", "replace")
                at += 24 + tlen
                if triple.endswith(target) and size:
                    co = data[pos + off:pos + off + size]
                    found.append((hashlib.sha256(co).hexdigest(), size))
        except struct.error:
            pass  # the magic string outside a bundle (e.g. in a string table)
        pos = data.find(MAGIC, pos + 1)
    return found


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: code_objects.py TARGET FILE...")
    target = argv[1]
    for path in argv[2:]:
        with open(path, "rb") as f:
            data = f.read()
        if COMPRESSED in data and MAGIC not in data:
            print("%s\tcompressed\t0" % path)
        for digest, size in bundles(data, target):
            print("%s\t%s\t%d" % (path, digest, size))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
