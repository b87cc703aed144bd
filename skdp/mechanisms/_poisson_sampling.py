"""Poisson sampling of rows, counter-addressed: the batches of DP-SGD.

Each row of ``[0, n)`` enters a step's batch independently with probability
``p = m / 2^32``, ``m = floor(q 2^32)`` (within ``2^-32`` of the public rate ``q`` and
never above it, so the accountant's ``q`` bounds the true rate), and a partition of
the rows finds its part of the batch alone, whatever the chunking: every random word
is AES-128 in counter mode under the step's secret key (randomgen's ``AESCounter``),
modelled as independent uniform words, at an address fixed by global row indices.
Two draws of this one law, chosen by the public ``m`` alone (so every partition of
a step uses the same one):

**By rows** (``q > 1/64``): row ``i`` is in the batch iff its 32-bit uniform ``u_i``,
the ``i``-th little-endian half-word of the stream, is below ``m``. A step costs
``n / 2`` words (about 1.1 ns a row with AES-NI).

**By blocks** (``q <= 1/64``, small batches): the rows are cut into public blocks of
``B = 2^10`` consecutive global rows (block ``j`` holds rows ``[jB, (j + 1)B)``,
whatever ``n`` and the chunking), and each block draws

1. its number of sampled rows ``K ~ Binomial(B, p)``, exactly, by inversion: ``K`` is
   the number of ``k < B`` with ``F_k <= U``, ``F`` the binomial distribution function
   (a dyadic rational: ``2^(32B) F_k`` is an integer) and ``U`` a uniform whose
   leading 64 bits are a word of the block; the table ``floor(2^64 F_k)`` decides
   unless the word equals an entry whose ``2^64 F_k`` is not an integer (probability
   at most ``B 2^-64`` a block), and then ``32B - 64`` further bits of ``U`` decide
   exactly against the integers ``2^(32B) F_k``;
2. which rows: with ``L = min(K, B - K)``, the first ``L`` distinct values of a
   sequence of independent uniform positions in ``[0, B)`` (16-bit words shifted
   right: ``B`` divides ``2^16``, so each is exactly uniform) are the sampled rows
   (``K <= B / 2``) or the rows left out (``K > B / 2``).

A step then costs ``(n / B) R`` words (``R = 1 + W``, below) and a few dozen vector
operations on them and on the batch's positions, instead of ``n / 2`` words: at a
batch of 256, about the time by rows on 30,000 rows, a fifth of it on 10^6 rows
(``benchmarks/bench_dpsgd.py --small-batch``). Above ``q = 1/64`` most blocks repeat a
position among their first ``L`` draws and the selection costs more than a word per
row, so rows are drawn by rows there.

Why the law of the blocks is exact. Given ``K = k``, the set of the first ``L``
distinct values of an i.i.d. uniform sequence has a law invariant under every
permutation of ``[0, B)`` (permuting the values permutes the sequence without
changing its law), so it is uniform over the ``C(B, L)`` sets of ``L`` positions, and
so is its complement over the sets of ``B - L``. The inclusion vector ``x`` of a block
therefore has ``P(x) = P(K = |x|) / C(B, |x|) = p^|x| (1 - p)^(B - |x|)``: the ``B``
rows are independent Bernoulli(``p``). Blocks read disjoint words, so they are
independent, and any set of rows (``[0, n)``, a partition's ``[a, b)``) is a set of
independent Bernoulli(``p``) rows, the law of the draw by rows. The words are
addressed by the block index alone, so rows ``[a, b)`` read the words of the blocks
they meet and find exactly their part of the one sample, in memory or in a
partition. Neither ``n`` nor the data enter the law or the addresses.

Several steps at once (:func:`poisson_samples`, :func:`poisson_step_samples`: a fit in
memory). A step's draw by blocks on few rows costs a few dozen vector operations and the
keying of AES, not its words; the steps of a fit are drawn together instead: their keys
read from the sampling stream in one call (the same words, in the same order, as one
:func:`poisson_key` a step), each step's words read from its key's stream at the same
addresses, and the blocks of all the steps processed as one draw whose block ``s B' + j``
is block ``j`` of step ``s`` (``B'`` blocks a step; the rare paths read further words of
that block's own stream). The AES-128 round keys of all the steps are expanded together
(FIPS-197) and set as the generator's state, which randomgen's ``seed`` does one key at
a time at several times the cost (checked once a process against ``seed``; a randomgen
whose state differs is keyed by ``seed``). The samples and the law are those of one draw
a step, bit for bit.

Word addresses of the draw by blocks, in 64-bit words of the key's stream (counter
block ``c`` gives words ``2c`` and ``2c + 1``): block ``j``'s first ``R = 1 + W``
words start at ``jR`` (its count word, then ``W`` words of four positions each); its
``r``-th further round of ``W`` words, read only when the first ``4W`` positions hold
fewer than ``L`` distinct values, at ``r 2^64 + jW``; the ``B / 2 - 1`` words that
break a tie of its count word at ``2^127 + jB / 2``. ``W`` is a function of ``B`` and
``m`` only (public), sized so that a further round is rare.
"""

import bisect
import functools
import math
import threading

import numpy as np

#: ``log2`` of the rows of a block.
BLOCK_BITS = 10

# The blocks drawn at a time (256 Ki rows), and the rows drawn at a time by rows (64
# KiB of uniforms): a step's sample costs memory of the order of the sample, not of
# the rows, and the words stay in cache.
_BLOCKS_AT_ONCE = 256
_SAMPLER_ROWS = 1 << 14

# The largest m drawn by blocks: q <= 1/64, at most 16 rows of a block on average.
# CPU time of a step's draw by rows over by blocks, on a loaded 2-core machine: at a
# batch of 256, 1.0 on 30,162 rows, 1.5 on 50,000, 2.4 on 10^5, 8 on 10^6; on 10^6
# rows 1.9 at q = 0.01 and 0.4 at q = 0.03; 0.74 on 5,000 rows at q = 0.002 (the
# draw by blocks costs a few dozen vector operations a step, and keying AES with the
# step's key, 25-60 us, is paid by both). A public constant: every partition of a
# step draws the same way.
_BLOCKS_MAX_NUMERATOR = 1 << 26

# ``p = m / 2^_RATE_BITS``; positions are read from 16-bit words.
_RATE_BITS = 32
_POSITION_BITS = 16

# The word addresses of the further rounds and of the tie-breaking bits.
_ROUND_STRIDE = 1 << 64
_TIE_BASE = 1 << 127

# One AES counter generator per thread, re-keyed for every draw (re-keying costs a
# third of a new generator, which also reads the operating system's entropy)
_SAMPLERS = threading.local()


def poisson_key(rng):
    """A step's sampling key: 128 bits from the fit's secret sampling stream ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The fit's secret sampling stream (ChaCha20).

    Returns
    -------
    key : ndarray of shape (2,), dtype uint64

    Examples
    --------
    >>> import numpy as np
    >>> from randomgen import ChaCha
    >>> poisson_key(np.random.Generator(ChaCha(seed=0))).shape
    (2,)
    """
    return rng.bit_generator.random_raw(2)   # two words of its ChaCha20 stream


def inclusion_numerator(sample_rate):
    """``m = floor(q 2^32)``: each row is sampled with probability ``m / 2^32``.

    Parameters
    ----------
    sample_rate : float in (0, 1)
        ``q``.

    Returns
    -------
    m : int

    Examples
    --------
    >>> inclusion_numerator(0.5) == 2**31
    True
    """
    return math.floor(sample_rate * 2.0**_RATE_BITS)   # < 2^32 for q < 1


def poisson_rows(key, sample_rate, start, stop):
    """The rows of ``[start, stop)`` in the Poisson sample of the step keyed ``key``.

    Each row is in the sample independently with probability ``floor(q 2^32) / 2^32``
    (the module's docstring gives the method and the proof); the sample of
    ``[start, stop)`` is that of the rows ``[0, N)`` restricted to it for any ``N``,
    so a partition of the rows finds its part of the in-memory sample alone.

    Parameters
    ----------
    key : ndarray of shape (2,), dtype uint64
        The step's key (:func:`poisson_key`), secret.
    sample_rate : float in (0, 1)
        ``q``.
    start, stop : int
        The global row indices ``[start, stop)``.

    Returns
    -------
    idx : ndarray of int64
        The sampled global row indices, sorted.

    Examples
    --------
    >>> import numpy as np
    >>> key = np.array([3, 4], dtype=np.uint64)
    >>> whole = poisson_rows(key, 0.1, 0, 5000)
    >>> part = poisson_rows(key, 0.1, 1000, 3000)
    >>> bool(np.array_equal(part, whole[(whole >= 1000) & (whole < 3000)]))
    True
    """
    m = inclusion_numerator(sample_rate)
    if m == 0 or stop <= start:
        return np.empty(0, dtype=np.int64)
    start, stop = int(start), int(stop)   # Python integers: addresses pass 2^64
    if m > _BLOCKS_MAX_NUMERATOR:
        return _rows_by_rows(key, m, start, stop)
    return _rows_by_blocks(key, m, start, stop)


def poisson_sample(n, sample_rate, rng):
    """Indices of a Poisson sample: each of ``n`` rows independently with prob. ``q``.

    One key from the secret stream ``rng`` (:func:`poisson_key`), then the rows
    ``[0, n)`` of :func:`poisson_rows`: the sample a partitioned fit draws for the
    same step, partition by partition.

    Parameters
    ----------
    n : int
        Number of rows.
    sample_rate : float in (0, 1)
        ``q``.
    rng : numpy.random.Generator
        The fit's secret sampling stream.

    Returns
    -------
    idx : ndarray of int64
        The sampled row indices, sorted.

    Examples
    --------
    >>> import numpy as np
    >>> from randomgen import ChaCha
    >>> idx = poisson_sample(1000, 0.2, np.random.Generator(ChaCha(seed=0)))
    >>> bool(np.all(np.diff(idx) > 0)) and idx.dtype == np.int64
    True
    """
    return poisson_rows(poisson_key(rng), sample_rate, 0, n)


def _rows_by_rows(key, m, start, stop):
    """The draw by rows: row ``i`` iff the ``i``-th 32-bit half-word is below ``m``."""
    aes = _generator()
    threshold = np.uint32(m)
    skip = _seek(aes, key, start >> 1)   # 64-bit word (start >> 1) holds row start's half
    skip, carry = 2 * skip + (start & 1), None   # half-words before ``start``
    parts = [np.empty(0, dtype=np.int64)]
    for first in range(start, stop, _SAMPLER_ROWS):
        size = min(_SAMPLER_ROWS, stop - first)
        have = 0 if carry is None else 1
        halves = aes.random_raw((skip + size - have + 1) // 2).astype("<u8", copy=False)
        halves = halves.view("<u4")
        if carry is not None:
            halves = np.concatenate([carry, halves])
        uniforms, carry = halves[skip:skip + size], halves[skip + size:]
        carry = carry if carry.size else None
        skip = 0
        hits = np.flatnonzero(uniforms < threshold)
        hits += first
        parts.append(hits)
    return parts[1] if len(parts) == 2 else np.concatenate(parts)


def _rows_by_blocks(key, m, start, stop, block_bits=BLOCK_BITS):
    """The draw by blocks (the module's docstring) of blocks of ``2^block_bits`` rows
    (at most 2^16; tests use small blocks)."""
    layout = _layout(block_bits, m)
    first, end = start >> block_bits, -(-stop >> block_bits)
    aes = _generator()
    skip = _seek(aes, key, first * layout.record)   # the blocks' words are consecutive
    parts = []
    for j0 in range(first, end, _BLOCKS_AT_ONCE):
        size = min(_BLOCKS_AT_ONCE, end - j0)
        words = aes.random_raw(skip + size * layout.record)[skip:]
        skip = 0
        local = _blocks_sample(_Addresses(key[None], j0, size), layout,
                               words.reshape(size, layout.record))
        local += j0 * layout.rows
        parts.append(local)
    rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
    # only the first and last blocks may reach outside [start, stop)
    return rows[np.searchsorted(rows, start):np.searchsorted(rows, stop)]


def poisson_samples(n, sample_rate, rng, count):
    """``count`` steps' Poisson samples of the rows ``[0, n)``, drawn together.

    Exactly ``[poisson_sample(n, sample_rate, rng) for _ in range(count)]``: the same
    keys from ``rng`` (left in the same state) and the same samples. A small batch on
    few rows (drawn by blocks, at most :data:`_BLOCKS_AT_ONCE` blocks a step) costs a
    few dozen vector operations a step; drawn together, the steps share them.

    Parameters
    ----------
    n : int
        Number of rows.
    sample_rate : float in (0, 1)
        ``q``.
    rng : numpy.random.Generator
        The fit's secret sampling stream.
    count : int
        Number of steps.

    Returns
    -------
    samples : list of ndarray of int64
        Each step's sampled row indices, sorted.

    Examples
    --------
    >>> import copy
    >>> import numpy as np
    >>> from randomgen import ChaCha
    >>> rng = np.random.Generator(ChaCha(seed=0))
    >>> alone = [poisson_sample(5000, 0.01, rng) for _ in range(3)]
    >>> rng = np.random.Generator(ChaCha(seed=0))
    >>> together = poisson_samples(5000, 0.01, rng, 3)
    >>> all(np.array_equal(a, b) for a, b in zip(alone, together))
    True
    """
    keys = rng.bit_generator.random_raw(2 * count).reshape(count, 2)   # poisson_key's words
    m = inclusion_numerator(sample_rate)
    blocks = -(-n >> BLOCK_BITS)
    if m == 0 or m > _BLOCKS_MAX_NUMERATOR or not 0 < blocks <= _BLOCKS_AT_ONCE:
        return [poisson_rows(key, sample_rate, 0, n) for key in keys]
    layout = _layout(BLOCK_BITS, m)
    words = _first_words(keys, blocks * layout.record)
    # step s's block j is block s B' + j of one draw (B' blocks a step)
    local = _blocks_sample(_Addresses(keys, 0, blocks), layout,
                           words.reshape(count * blocks, layout.record))
    span = blocks * layout.rows
    steps = local // span
    local -= steps * span
    keep = local < n   # the last block's rows past n
    local, steps = local[keep], steps[keep]
    cuts = np.searchsorted(steps, np.arange(count + 1)).tolist()   # np.split, without
    return [local[a:b] for a, b in zip(cuts[:-1], cuts[1:])]      # its per-part overhead


# The blocks (steps times blocks a step) drawn together by :func:`poisson_step_samples`:
# 460 KiB of words, and about 64 Ki sampled rows at most (q <= 1/64).
_STEP_BLOCKS_AT_ONCE = 1 << 12


def poisson_step_samples(n, sample_rate, rng, n_steps):
    """Each of ``n_steps`` steps' Poisson samples of the rows ``[0, n)``, in order.

    The samples and the state of ``rng`` of :func:`poisson_sample` called once a step
    (:func:`poisson_samples`); a small batch on few rows is drawn for several steps at
    once (:data:`_STEP_BLOCKS_AT_ONCE` blocks in all), anything else a step at a time.

    Parameters
    ----------
    n : int
        Number of rows.
    sample_rate : float in (0, 1)
        ``q``.
    rng : numpy.random.Generator
        The fit's secret sampling stream, read only by this draw while it runs.
    n_steps : int
        Number of steps.

    Yields
    ------
    idx : ndarray of int64
        A step's sampled row indices, sorted.

    Examples
    --------
    >>> import numpy as np
    >>> from randomgen import ChaCha
    >>> steps = poisson_step_samples(5000, 0.01, np.random.Generator(ChaCha(seed=0)), 3)
    >>> len(list(steps))
    3
    """
    blocks = -(-n >> BLOCK_BITS)
    m = inclusion_numerator(sample_rate)
    together = (0 < m <= _BLOCKS_MAX_NUMERATOR and 0 < blocks <= _BLOCKS_AT_ONCE)
    count = max(1, _STEP_BLOCKS_AT_ONCE // blocks) if together else 1
    for first in range(0, n_steps, count):
        yield from poisson_samples(n, sample_rate, rng, min(count, n_steps - first))


class _Addresses:
    """The key and global block index of each block of a draw: blocks ``i`` of a
    draw are block ``first + i % per_key`` of the stream of ``keys[i // per_key]``
    (the rare paths read further words of a block's own stream)."""

    def __init__(self, keys, first, per_key):
        self.keys, self.first, self.per_key = keys, first, per_key

    def __call__(self, i):
        return self.keys[i // self.per_key], self.first + i % self.per_key


@functools.lru_cache(maxsize=8)
def _layout(block_bits, m):
    """The :class:`_Layout` of ``(block_bits, m)``, built once (its table costs about
    40 ms for B = 1024)."""
    return _Layout(block_bits, m)


class _Layout:
    """The public constants of a draw: the block size ``B``, ``m``, the count table and
    the ``W`` position words of a round (``R = 1 + W`` words a block)."""

    def __init__(self, block_bits, m):
        if not 1 <= block_bits <= _POSITION_BITS:
            raise ValueError(f"block_bits must be in [1, {_POSITION_BITS}].")
        self.block_bits, self.m = block_bits, m
        self.rows = 1 << block_bits
        self.thresholds, self.inexact_before = _count_table(self.rows, m)
        self.round_words = _round_words(self.rows, m)
        self.record = 1 + self.round_words
        self.position_shift = np.uint16(_POSITION_BITS - block_bits)
        self.block_starts = np.arange(_BLOCKS_AT_ONCE, dtype=np.int64) * self.rows
        self.draw_index = np.arange(4 * self.round_words)


def _round_words(rows, m):
    """``W``: words of positions (four each) a block reads in a round, enough for the
    distinct positions of a count 7 standard deviations above its mean in all but a
    rare block (the expected draws for ``L`` distinct of ``B`` are ``B log(B / (B -
    L))``). A function of public constants only; it sets the word layout, not the law."""
    mean = rows * min(m, 2**_RATE_BITS - m) / 2.0**_RATE_BITS
    wanted = min(rows / 2, mean + 7.0 * math.sqrt(mean) + 8.0)
    draws = rows * math.log(rows / (rows - wanted))
    return math.ceil((1.1 * draws + 8.0) / 4.0)


def _cdf_numerators(rows, m):
    """The integers ``2^(32B) F_k``, ``k = 0 .. B``, of ``Binomial(B, m / 2^32)``.

    ``2^(32B) P(K = k) = C(B, k) m^k (2^32 - m)^(B - k)``, each term from the previous
    one by an exact integer division.
    """
    rest = 2**_RATE_BITS - m
    term, total, out = rest**rows, 0, []
    for k in range(rows + 1):
        total += term
        out.append(total)
        term = term * (rows - k) * m // ((k + 1) * rest)
    assert total == 1 << (_RATE_BITS * rows)   # the terms sum to one
    return out


@functools.lru_cache(maxsize=8)
def _count_table(rows, m):
    """``floor(2^64 F_k)`` for ``k < B`` (uint64), and for each ``k`` the number of
    ``k' < k`` whose ``2^64 F_k'`` is not an integer (a word equal to one of these
    entries does not decide the count)."""
    shift = _RATE_BITS * rows - 64
    numerators = _cdf_numerators(rows, m)[:rows]
    thresholds = np.array([c >> shift for c in numerators], dtype=np.uint64)
    inexact = [c & ((1 << shift) - 1) != 0 for c in numerators]
    return thresholds, np.concatenate([[0], np.cumsum(inexact)])


def _generator():
    """The thread's AES counter generator (imported here: see skdp.utils._random)."""
    aes = getattr(_SAMPLERS, "aes", None)
    if aes is None:
        from randomgen import AESCounter

        aes = _SAMPLERS.aes = AESCounter(key=0, counter=0)
    return aes


def _seek(aes, key, address):
    """Key ``aes`` with ``key`` at the counter block of word ``address``; returns the
    number of words to skip (0 or 1) to reach that word."""
    aes.seed(key=key, counter=address >> 1)
    return address & 1


def _first_words(keys, size):
    """The first ``size`` words of the stream of each of ``keys``, shape ``(count,
    size)``: :func:`_read` at address 0 for each key. Keying the generator costs far
    more than reading a few hundred words (randomgen's ``seed``, 25-60 us), so the
    keys' AES-128 round keys are expanded together (:func:`_round_keys`) and set as
    the generator's state, when it reads them as its ``seed()`` does
    (:func:`_keys_by_state`)."""
    aes = _generator()
    words = np.empty((len(keys), size), dtype=np.uint64)
    if not _keys_by_state():
        for key, out in zip(keys, words):
            out[...] = _read(aes, key, 0, size)
        return words
    for schedule, out in zip(_round_keys(keys), words):
        aes.state = _keyed_state(schedule)
        out[...] = aes.random_raw(size)
    return words


def _keyed_state(schedule):
    """An ``AESCounter`` state at counter block 0 of the key whose round keys are
    ``schedule`` (randomgen holds the round keys as its ``seed`` and four counter
    blocks, low and high words, ahead of an empty buffer)."""
    return {"bit_generator": _AES_NAME,
            "s": {"state": np.zeros(64, dtype=np.uint8), "seed": schedule,
                  "counter": _FIRST_COUNTERS, "offset": 64},
            "has_uint32": 0, "uinteger": 0}


_AES_NAME = "randomgen.aes.AESCounter"
_FIRST_COUNTERS = np.array([0, 0, 1, 0, 2, 0, 3, 0], dtype=np.uint64)


@functools.lru_cache(maxsize=1)
def _keys_by_state():
    """Whether a state of :func:`_keyed_state` gives the stream of ``seed(key=...)``
    (checked once a process on two keys, past the first buffer: a randomgen whose
    state differs is keyed by ``seed``)."""
    from randomgen import AESCounter

    keys = np.array([[1, 2], [2**64 - 1, 2**63 + 5]], dtype=np.uint64)
    try:
        by_state = AESCounter(key=0, counter=0)
        for key, schedule in zip(keys, _round_keys(keys)):
            by_state.state = _keyed_state(schedule)
            if not np.array_equal(by_state.random_raw(11),
                                  AESCounter(key=key, counter=0).random_raw(11)):
                return False
    except (KeyError, TypeError, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=1)
def _sbox():
    """The AES S-box (FIPS-197 5.1.1): the inverse in GF(2^8) modulo ``x^8 + x^4 + x^3
    + x + 1`` (0 for 0), then the affine map ``b ^ rot1(b) ^ ... ^ rot4(b) ^ 0x63``."""
    power, log = [0] * 255, [0] * 256
    x = 1
    for i in range(255):   # 3 generates the multiplicative group
        power[i], log[x] = x, i
        x ^= ((x << 1) ^ (0x11B if x & 0x80 else 0)) & 0xFF
    box = np.empty(256, dtype=np.uint8)
    for a in range(256):
        inverse = 0 if a == 0 else power[(255 - log[a]) % 255]
        value = inverse
        for k in range(1, 5):
            value ^= ((inverse << k) | (inverse >> (8 - k))) & 0xFF
        box[a] = value ^ 0x63
    return box


_ROUND_CONSTANTS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 27, 54], dtype=np.uint8)


def _round_keys(keys):
    """The AES-128 key expansion (FIPS-197 5.2) of each key, all keys at once.

    Parameters
    ----------
    keys : ndarray of shape (count, 2), dtype uint64
        Keys as randomgen takes them (the 16 key bytes little-endian).

    Returns
    -------
    schedule : ndarray of shape (count, 22), dtype uint64
        The eleven round keys of each key, in the same byte order.
    """
    count, box = len(keys), _sbox()
    w = np.empty((count, 44, 4), dtype=np.uint8)
    w[:, :4] = np.ascontiguousarray(keys, dtype="<u8").view(np.uint8).reshape(count, 4, 4)
    for i in range(4, 44):
        word = w[:, i - 1]
        if i % 4 == 0:   # RotWord, SubWord, Rcon
            word = box[np.roll(word, -1, axis=1)]
            word[:, 0] ^= _ROUND_CONSTANTS[i // 4 - 1]
        np.bitwise_xor(w[:, i - 4], word, out=w[:, i])
    return w.reshape(count, 176).view("<u8").reshape(count, 22)


def _read(aes, key, address, size):
    """``size`` 64-bit words of the stream of ``key`` from word ``address`` on."""
    skip = _seek(aes, key, address)
    return aes.random_raw(skip + size)[skip:]


def _blocks_sample(addresses, layout, words):
    """The local rows ``i B + position`` (sorted) sampled in the blocks ``i = 0, 1,
    ...`` of a draw, from their first words ``words`` (one row of ``R`` words a block;
    ``addresses``: each block's key and global index, :class:`_Addresses`).

    A block's first ``L`` position draws are its answer when they are distinct; one
    sort of them all finds the blocks where they are not (about ``b q / 2`` a step for
    a batch of ``b`` rows), whose first ``L`` distinct draws are then found together
    (:func:`first_distinct`). A step of a small batch on many rows costs a few vector
    operations on ``n / B`` counts and the batch's positions."""
    rows, size = layout.rows, words.shape[0]
    counts = _block_counts(addresses, layout, words[:, 0])
    positions = words.view("<u2")[:, 4:] >> layout.position_shift
    if counts.max() > min(rows // 2, positions.shape[1]):   # q large, or a rare block
        return _one_by_one(addresses, layout, positions, counts)
    starts = (layout.block_starts[:size] if size <= _BLOCKS_AT_ONCE
              else np.arange(size, dtype=np.int64) * rows)
    local = np.repeat(starts, counts)
    local += positions[layout.draw_index < counts[:, None]]
    local.sort()
    repeats = local[1:][local[1:] == local[:-1]]
    if repeats.size:   # blocks whose first L draws repeat a position
        redo = np.zeros(size, dtype=bool)
        redo[repeats // rows] = True
        local = local[~redo[local // rows]]
        redone = _distinct_positions(addresses, layout, positions, counts,
                                     np.flatnonzero(redo))
        local = np.sort(np.concatenate([local, redone]))
    return local


def _distinct_positions(addresses, layout, positions, wanted, blocks):
    """The local rows ``i B + position`` of the first ``wanted[i]`` distinct position
    draws of each block ``i`` of ``blocks`` (about one a step at a batch of 256 on
    Adult; every block in the general case), unsorted: found together in the blocks
    whose first round holds enough distinct draws (:func:`_first_distinct_in_rows`),
    through further rounds block by block in the others."""
    chosen, complete = _first_distinct_in_rows(positions[blocks], wanted[blocks])
    local = [(blocks[:, None] * layout.rows + positions[blocks])[chosen]]
    for i in blocks[~complete].tolist():
        key, block = addresses(i)
        local.append(i * layout.rows + _block_positions(key, layout, block, positions[i],
                                                        int(wanted[i])))
    return np.concatenate(local)


def _first_distinct_in_rows(draws, wanted):
    """For each row of ``draws``, the mask of its first ``wanted`` distinct values (each
    value's first draw, in draw order: :func:`first_distinct` of the row), and whether
    the row holds that many (a row that does not gets an empty mask)."""
    order = np.argsort(draws, axis=1, kind="stable")   # equal values in draw order
    ranked = np.take_along_axis(draws, order, axis=1)
    first = np.ones(draws.shape, dtype=bool)
    first[:, 1:] = ranked[:, 1:] != ranked[:, :-1]     # a value's first draw
    firsts = np.zeros(draws.shape, dtype=bool)
    np.put_along_axis(firsts, order, first, axis=1)
    seen = np.cumsum(firsts, axis=1)                   # distinct values drawn so far
    complete = seen[:, -1] >= wanted if draws.shape[1] else wanted <= 0
    return firsts & (seen <= wanted[:, None]) & complete[:, None], complete


def _one_by_one(addresses, layout, positions, counts):
    """:func:`_blocks_sample`'s local rows in the general case: when ``K > B / 2`` the
    ``B - K`` first distinct positions drawn are the rows left out."""
    rows = layout.rows
    left_out = counts > rows // 2
    wanted = np.where(left_out, rows - counts, counts)
    local = _distinct_positions(addresses, layout, positions, wanted,
                                np.arange(counts.size))
    drawn = np.zeros(counts.size * rows, dtype=bool)
    drawn[local] = True
    drawn ^= np.repeat(left_out, rows)   # in a left-out block, the rows not drawn
    return np.flatnonzero(drawn)


def _counts(key, layout, first, words):
    """Each count of the blocks ``first, first + 1, ...`` of the stream of ``key``
    (:func:`_block_counts`)."""
    return _block_counts(_Addresses(key[None], first, words.size), layout, words)


def _block_counts(addresses, layout, words):
    """Each block's count ``K ~ Binomial(B, p)`` by inversion of its uniform, whose
    leading 64 bits are ``words``: ``K = #{k < B : F_k <= U}`` (``addresses``: each
    block's key and global index, for a tie)."""
    thresholds = layout.thresholds
    counts = np.searchsorted(thresholds, words, side="right")
    # rare: a word equal to the entry below its count (a count of 0 reads the last
    # entry, never equal to a word below the first; this is only a gate)
    if (thresholds[counts - 1] == words).any():
        low = np.searchsorted(thresholds, words, side="left")
        # a tie: the word is floor(2^64 F_k) for a k with 2^64 F_k not an integer
        tied = layout.inexact_before[counts] != layout.inexact_before[low]
        for i in np.flatnonzero(tied).tolist():
            key, block = addresses(i)
            counts[i] = _tied_count(key, layout, block, int(words[i]))
    return counts


def _tied_count(key, layout, block, top):
    """The count of a block whose first word does not decide it: the uniform's first
    ``32B`` bits (``top`` then ``B / 2 - 1`` words) against the exact ``2^(32B) F_k``."""
    from randomgen import AESCounter   # its own generator: the caller's is mid-read

    rest_words = layout.rows // 2 - 1
    words = _read(AESCounter(key=0, counter=0), key,
                  _TIE_BASE + block * (layout.rows // 2), rest_words)
    uniform = (top << (64 * rest_words)) | int.from_bytes(
        np.asarray(words, dtype=">u8").tobytes(), "big")
    numerators = _cdf_numerators(layout.rows, layout.m)[:layout.rows]
    return bisect.bisect_right(numerators, uniform)


def first_distinct(draws, wanted):
    """The first ``wanted`` distinct values of the sequence ``draws``, in draw order,
    or ``None`` when it holds fewer.

    Parameters
    ----------
    draws : list of int
        A sequence of draws.
    wanted : int
        How many distinct values are needed.

    Returns
    -------
    values : list of int or None

    Examples
    --------
    >>> first_distinct([3, 3, 1, 0], 2)
    [3, 1]
    >>> first_distinct([3, 3], 2) is None
    True
    """
    values = list(dict.fromkeys(draws))[:wanted]   # first occurrences, in draw order
    return values if len(values) == wanted else None


def _block_positions(key, layout, block, positions, wanted):
    """The first ``wanted`` distinct positions of a block's draws: its first round
    ``positions``, then further rounds of ``W`` words while it holds fewer (round ``r``
    at word ``r 2^64 + jW``; the ``2^63`` rounds below the tie-breaking words are never
    all needed: each round completes the block with a probability bounded away from 0)."""
    sequence = positions.tolist()
    picked, r, aes = first_distinct(sequence, wanted), 0, None
    while picked is None:
        if aes is None:
            from randomgen import AESCounter   # its own generator: the caller's is mid-read

            aes = AESCounter(key=0, counter=0)
        r += 1
        words = _read(aes, key, r * _ROUND_STRIDE + block * layout.round_words,
                      layout.round_words)
        more = words.astype("<u8", copy=False).view("<u2") >> layout.position_shift
        sequence += more.tolist()
        picked = first_distinct(sequence, wanted)
    return np.array(picked, dtype=np.int64)
