#!/usr/bin/env python3
"""The folding constants of the carry-less-multiply CRC-32 in pyrmq/_speedups/_native.pyx, and a
bit-level model of that algorithm checked against zlib.crc32.

CRC-32 (zlib's, polynomial P = 0x104C11DB7) is computed in the reflected bit order: bit j of a
little-endian 128-bit block is the coefficient of x^(127-j). A 64x64 carry-less product of two
reflected qwords A, B read as a reflected 128-bit value is x*A*B, so folding a remainder
X = L*x^64 + H forward by D bits is clmul(L, x^(63+D) mod P) xor clmul(H, x^(D-1) mod P). Four
lanes fold 64 bytes at a time (D = 512), then fold into one (D = 384, 256, 128), then 16 bytes at
a time (D = 128). The 16 bytes left are a plain message whose CRC (register 0) is the CRC of
everything folded, so the table method finishes it and the tail.

    python3 tools/bench/crc32_fold_constants.py   # prints the constants, checks the model
"""

from __future__ import annotations

import os
import zlib

P = 0x104C11DB7
M64 = (1 << 64) - 1


def x_pow_mod(e: int) -> int:
    """x^e mod P, in the normal bit order (bit d = coefficient of x^d)."""
    r = 1
    for _ in range(e):
        r <<= 1
        if r >> 32 & 1:
            r ^= P
    return r


def constant(e: int) -> int:
    """x^e mod P as a reflected qword (coefficient of x^d at bit 63-d)."""
    k = x_pow_mod(e)
    return sum(1 << (63 - d) for d in range(32) if k >> d & 1)


def clmul(a: int, b: int) -> int:
    r = 0
    for i in range(64):
        if a >> i & 1:
            r ^= b << i
    return r


def fold(x: int, d: int) -> int:
    return clmul(x & M64, constant(63 + d)) ^ clmul(x >> 64, constant(d - 1))


_TABLE = []
for _i in range(256):
    _v = _i
    for _ in range(8):
        _v = (_v >> 1) ^ (0xEDB88320 if _v & 1 else 0)
    _TABLE.append(_v)


def table_step(crc: int, data: bytes) -> int:
    for b in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ b) & 0xFF]
    return crc


def model_crc32(data: bytes) -> int:
    """zlib.crc32(data) by the folding the compiled code does (bodies of 64 bytes and more)."""
    reg, n = 0xFFFFFFFF, len(data)
    if n < 64:
        return table_step(reg, data) ^ 0xFFFFFFFF

    def load(p: int) -> int:
        return int.from_bytes(data[p : p + 16], "little")

    lanes = [load(16 * i) for i in range(4)]
    lanes[0] ^= reg
    p = 64
    while n - p >= 64:
        lanes = [fold(lanes[i], 512) ^ load(p + 16 * i) for i in range(4)]
        p += 64
    x = fold(lanes[0], 384) ^ fold(lanes[1], 256) ^ fold(lanes[2], 128) ^ lanes[3]
    while n - p >= 16:
        x = fold(x, 128) ^ load(p)
        p += 16
    reg = table_step(0, x.to_bytes(16, "little"))
    return table_step(reg, data[p:]) ^ 0xFFFFFFFF


def main() -> int:
    for n in (64, 65, 79, 80, 127, 128, 129, 200, 1024, 1037):
        data = os.urandom(n)
        assert model_crc32(data) == zlib.crc32(data), n
    for d in (512, 384, 256, 128):
        print(
            f"D={d}: lo = x^{63 + d} mod P = {constant(63 + d):#018x}, hi = x^{d - 1} mod P = {constant(d - 1):#018x}"
        )
    print("model agrees with zlib.crc32")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
