"""Winnowed k-gram fingerprints of a token stream.

The method is winnowing: Schleimer, Wilkerson and Aiken, "Winnowing: Local Algorithms for
Document Fingerprinting", SIGMOD 2003, the method behind MOSS. Every run of `K` consecutive
tokens (a k-gram) is hashed; of every `W` consecutive hashes, the smallest (the rightmost on a
tie) is kept. The paper's guarantee: any run of at least `W + K - 1` tokens that two streams
share gives both at least one kept hash in common, and no run shorter than `K` ever matches.

Why K = 12 and W = 4. A statement of this code is 10 to 20 normalised tokens
(`_2 = _3 . exp ( _1 - _3 . max ( _1 ) )` is 15), so a k-gram of 12 is most of one statement:
short enough that a function of five lines with one line changed keeps most of its k-grams,
long enough that the shared bits of any two attention functions (`_0 . T @ _1`, 5 tokens)
are no fragment. W + K - 1 = 15: any whole shared statement is found. Keeping one hash in
W (a density of about 2 / (W + 1) = 0.4 per token) keeps an index of 10,000 notebooks small.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

K = 12
"""Tokens in a k-gram: the shortest run of code that can be evidence."""
W = 4
"""Hashes in a window: runs of W + K - 1 tokens are always found."""
_MASK = (1 << 61) - 1


def token_id(text: str) -> int:
    """A token as a number, the same in every run (Python's `hash` of a str is not)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def kgrams(ids: Sequence[int], k: int = K) -> list[int]:
    """The hash of every k-gram, in order (none for a stream shorter than k). A tuple of
    ints hashes the same in every run."""
    return [hash(tuple(ids[i:i + k])) & _MASK for i in range(len(ids) - k + 1)]


def winnow(hashes: Sequence[int], w: int = W) -> list[tuple[int, int]]:
    """(hash, position) of the k-grams that winnowing keeps, in order: the smallest of each
    window of `w`, the rightmost on a tie, each kept once. A stream of fewer than `w`
    hashes keeps its smallest."""
    if not hashes:
        return []
    if len(hashes) <= w:
        low = min(range(len(hashes)), key=lambda i: (hashes[i], -i))
        return [(hashes[low], low)]
    kept: list[tuple[int, int]] = []
    last = -1
    for start in range(len(hashes) - w + 1):
        low = start
        for i in range(start + 1, start + w):
            if hashes[i] <= hashes[low]:
                low = i
        if low != last:
            kept.append((hashes[low], low))
            last = low
    return kept
