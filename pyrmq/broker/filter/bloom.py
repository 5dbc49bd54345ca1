"""The bloom filter whose positions ``consumerFilter.json`` records per group and topic.

Java: ``filter/util/BloomFilter`` (Guava ``murmur3_128`` of the UTF-8 string,
Kirsch-Mitzenmacher double hashing into ``m`` bits with ``k`` functions). pyrmq
does not build per-message bit maps (``enableCalcFilterBitMap`` is off by
default in Java too); it computes the same ``bloomFilterData`` so the Java
broker accepts a ``consumerFilter.json`` written by pyrmq (it drops all
filter data whose ``bitNum``/``bitPos`` do not fit its own filter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_M64 = (1 << 64) - 1
_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    k ^= k >> 33
    return k


def murmur3_x64_128(data: bytes, seed: int = 0) -> tuple[int, int]:
    """MurmurHash3 x64 128-bit: (h1, h2) as unsigned 64-bit ints (Guava's asLong() is h1)."""
    h1 = h2 = seed & _M64
    n = len(data)
    nblocks = n // 16
    for i in range(nblocks):
        k1 = int.from_bytes(data[i * 16 : i * 16 + 8], "little")
        k2 = int.from_bytes(data[i * 16 + 8 : i * 16 + 16], "little")
        k1 = (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
        h1 ^= k1
        h1 = (_rotl(h1, 27) + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        k2 = (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
        h2 ^= k2
        h2 = (_rotl(h2, 31) + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = data[nblocks * 16 :]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return h1, h2


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


@dataclass(frozen=True, slots=True)
class BloomFilterData:
    bit_pos: tuple[int, ...]
    bit_num: int


class BloomFilter:
    """``BloomFilter.createByFn(f, n)``: error rate f%, n expected elements."""

    def __init__(self, f: int = 20, n: int = 32) -> None:
        if not 1 <= f < 100:
            raise ValueError("f must be greater or equal than 1 and less than 100")
        if n < 1:
            raise ValueError("n must be greater than 0")
        rate = f / 100.0
        self.f, self.n = f, n
        self.k = math.ceil(math.log(rate) / math.log(0.5))
        m = math.ceil(n * (math.log(1 / rate) / math.log(2)) * (math.log(math.e) / math.log(2)))
        self.m = int(8 * math.ceil(m / 8.0))

    def calc_bit_positions(self, s: str) -> tuple[int, ...]:
        h1, _ = murmur3_x64_128(s.encode("utf-8"))
        hash1, hash2 = _int32(h1), _int32(h1 >> 32)
        out = []
        for i in range(1, self.k + 1):
            combined = _int32(hash1 + i * hash2)
            if combined < 0:
                combined = ~combined
            out.append(combined % self.m)
        return tuple(out)

    def generate(self, s: str) -> BloomFilterData:
        return BloomFilterData(self.calc_bit_positions(s), self.m)

    def is_valid(self, data: BloomFilterData | None) -> bool:
        return data is not None and data.bit_num == self.m and len(data.bit_pos) == self.k
