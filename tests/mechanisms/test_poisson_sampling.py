"""The counter-addressed Poisson sampler of DP-SGD (``skdp.mechanisms._poisson_sampling``).

The law every draw must have: each row independently in the batch with probability
exactly ``p = floor(q 2^32) / 2^32``, identical for any row chunking. The draw by
blocks (small batches) is checked against that law piece by piece with exact
arithmetic (the binomial count's table and its tie-break, the uniform choice of the
positions by enumeration), then as a whole by the frequencies of every inclusion
pattern of small blocks, across block boundaries and through its rare paths (rows
left out, further rounds).
"""

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from randomgen import AESCounter
from scipy import stats

from skdp.mechanisms import _poisson_sampling as sampling
from skdp.mechanisms._poisson_sampling import (first_distinct, inclusion_numerator,
                                               poisson_rows)


def _binomial_cdf(rows, m):
    """``F_k`` of ``Binomial(rows, m / 2^32)`` as exact fractions, ``k = 0 .. rows``."""
    p = Fraction(m, 2**32)
    pmf = [math.comb(rows, k) * p**k * (1 - p) ** (rows - k) for k in range(rows + 1)]
    return list(itertools.accumulate(pmf))


def _keys(count, seed=0):
    return np.random.default_rng(seed).integers(0, 2**64, size=(count, 2), dtype=np.uint64)


@pytest.fixture
def small_rounds(monkeypatch):
    """One word (four positions) a round: the further rounds are frequent."""
    monkeypatch.setattr(sampling, "_round_words", lambda rows, m: 1)
    sampling._layout.cache_clear()
    yield
    sampling._layout.cache_clear()


# -- the count: an exact binomial by inversion --------------------------------------------

@pytest.mark.parametrize("rows, q", [(16, 0.3), (16, 1e-3), (64, 0.01), (8, 0.97)])
def test_count_table_is_the_binomial_distribution_function(rows, q):
    m = inclusion_numerator(q)
    thresholds, _ = sampling._count_table(rows, m)
    cdf = _binomial_cdf(rows, m)
    assert cdf[-1] == 1
    expected = [math.floor(F * 2**64) for F in cdf[:-1]]
    assert thresholds.tolist() == expected


def test_count_table_of_the_default_block():
    """B = 1024 at a batch of 256 on Adult, in integers: ``2^(32B) P(K = k) = C(B, k)
    m^k (2^32 - m)^(B - k)``; every entry, and the mean of the exact law is ``B m /
    2^32`` (the rate the accountant's ``q`` bounds)."""
    rows, q = 1 << sampling.BLOCK_BITS, 256 / 30162
    m = inclusion_numerator(q)
    thresholds, _ = sampling._count_table(rows, m)
    terms = [math.comb(rows, k) * m**k * (2**32 - m) ** (rows - k) for k in range(rows + 1)]
    cdf = list(itertools.accumulate(terms))
    assert cdf[-1] == 2 ** (32 * rows)
    assert thresholds.tolist() == [c >> (32 * rows - 64) for c in cdf[:-1]]
    assert sum(k * t for k, t in enumerate(terms)) == rows * m * 2 ** (32 * (rows - 1))
    p = Fraction(m, 2**32)
    assert p <= Fraction(q) < p + Fraction(1, 2**32)


@pytest.mark.parametrize("rows, q", [(8, 0.3), (8, 0.02), (16, 0.6)])
def test_count_of_every_boundary_word_is_exact(rows, q):
    """Words at, just below and just above every table entry: where the word decides,
    the count is ``#{k : F_k <= U}`` for every ``U`` in ``[w, w + 1) / 2^64``; where it
    does not (a tie), the tie-break reads the block's further bits at their documented
    address and the count is exact for that ``U``."""
    m = inclusion_numerator(q)
    layout = sampling._Layout(int(math.log2(rows)), m)
    cdf = _binomial_cdf(rows, m)[:-1]
    words = sorted({int(t) + d for t in layout.thresholds for d in (-1, 0, 1)} - {-1, 2**64})
    key, block = np.array([11, 12], dtype=np.uint64), 5
    ties = 0
    for w in words:
        count = int(sampling._counts(key, layout, block, np.array([w], dtype=np.uint64))[0])
        low, high = Fraction(w, 2**64), Fraction(w + 1, 2**64)
        decided = sum(F <= low for F in cdf)
        if decided == sum(F < high for F in cdf):
            assert count == decided
            continue
        ties += 1   # the uniform's first 32 B bits: w, then B/2 - 1 words at 2^127 + j B/2
        aes = AESCounter(key=key, counter=((1 << 127) + block * rows // 2) >> 1)
        rest = aes.random_raw(rows // 2 - 1)
        bits = (w << (64 * rest.size)) | int.from_bytes(rest.astype(">u8").tobytes(), "big")
        assert count == sum(F <= Fraction(bits, 2 ** (32 * rows)) for F in cdf)
    assert ties > 0   # the tie-break was exercised


def test_counts_are_binomial():
    """The blocks' counts over many keys against Binomial(B, p) (chi-square)."""
    q = 0.01
    m = inclusion_numerator(q)
    rows = 1 << sampling.BLOCK_BITS
    counts = np.concatenate([np.bincount(sampling._rows_by_blocks(k, m, 0, 64 * rows) // rows,
                                         minlength=64) for k in _keys(300)])
    support = np.arange(counts.max() + 2)
    expected = counts.size * stats.binom.pmf(support, rows, m / 2**32)
    expected[-1] = counts.size * stats.binom.sf(support[-2], rows, m / 2**32)
    observed = np.bincount(np.minimum(counts, support[-1]), minlength=support.size)
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


# -- the positions: the first distinct draws are a uniform set ----------------------------

@pytest.mark.parametrize("values, length, wanted", [(4, 5, 2), (4, 6, 3), (5, 4, 1)])
def test_first_distinct_draws_are_a_uniform_set(values, length, wanted):
    """Every sequence of ``length`` draws from ``[0, values)`` (equally likely): those
    holding ``wanted`` distinct values give each set of ``wanted`` values equally often,
    the others too few; the set is given in draw order."""
    sets, short = Counter(), 0
    for draws in itertools.product(range(values), repeat=length):
        picked = first_distinct(list(draws), wanted)
        if picked is None:
            short += 1
            assert len(set(draws)) < wanted
            continue
        assert picked == [v for i, v in enumerate(draws) if v not in draws[:i]][:wanted]
        sets[frozenset(picked)] += 1
    assert len(sets) == math.comb(values, wanted)
    assert len(set(sets.values())) == 1
    assert short + sum(sets.values()) == values**length


# -- the whole draw -------------------------------------------------------------------------

def _pattern_frequencies(m, start, stop, block_bits, keys):
    """Counts of each inclusion pattern of rows ``[start, stop)`` over the keys."""
    width = stop - start
    patterns = np.zeros(2**width, dtype=np.int64)
    for key in keys:
        rows = sampling._rows_by_blocks(key, m, start, stop, block_bits) - start
        patterns[int(np.sum(2**rows))] += 1
    return patterns


@pytest.mark.parametrize("q, start, stop", [
    (0.3, 0, 8),     # a whole block of 8: some blocks leave rows out (K > 4)
    (0.7, 0, 8),     # mostly rows left out
    (0.3, 5, 11),    # across a block boundary: two blocks' rows independent
    (0.05, 0, 8),
])
@pytest.mark.parametrize("rounds", ["default", "one word"])
def test_block_inclusion_patterns_are_independent_bernoulli(q, start, stop, rounds,
                                                           request):
    """The joint law of the inclusion vector of small blocks (8 rows): the frequency of
    each of the 2^8 patterns over 4,000 keys against ``p^k (1 - p)^(8 - k)``
    (chi-square, bins of expectation below 5 pooled); with one word a round the
    further rounds run in most blocks."""
    if rounds == "one word":
        request.getfixturevalue("small_rounds")
    m = inclusion_numerator(q)
    p = m / 2**32
    draws = 4000
    observed = _pattern_frequencies(m, start, stop, 3, _keys(draws, seed=int(q * 100)))
    ones = np.array([bin(x).count("1") for x in range(observed.size)])
    expected = draws * p**ones * (1 - p) ** (stop - start - ones)
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("block_bits, q", [(3, 0.3), (3, 0.8), (10, 1e-3), (10, 0.012)])
def test_block_draw_is_the_same_for_any_chunking(block_bits, q, small_rounds):
    """Rows ``[a, b)`` draw exactly their part of the sample of ``[0, n)``, whatever
    the cut (block edges, inside blocks, one row), also through the rare paths."""
    m, n = inclusion_numerator(q), 20_000
    for key in _keys(3):
        whole = sampling._rows_by_blocks(key, m, 0, n, block_bits)
        assert whole.dtype == np.int64 and np.all(np.diff(whole) > 0)
        assert whole.size == 0 or (whole[0] >= 0 and whole[-1] < n)
        cuts = [0, 1, 7, 8, 9, 1023, 1024, 1025, 4097, 12_345, n - 1, n]
        parts = [sampling._rows_by_blocks(key, m, a, b, block_bits)
                 for a, b in zip(cuts[:-1], cuts[1:])]
        np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_small_rates_are_drawn_by_blocks_and_read_the_batch_not_the_rows(monkeypatch):
    """At a batch of 100 on 10^6 rows the draw reads about (n / B) R words, a few
    per sampled row, not a word per two rows (the draw by rows)."""
    n, q = 1_000_000, 1e-4
    words = []
    generator = sampling._generator()

    class Counting:
        def seed(self, **kwargs):
            generator.seed(**kwargs)

        def random_raw(self, size):
            words.append(size)
            return generator.random_raw(size)

    monkeypatch.setattr(sampling, "_generator", Counting)
    idx = poisson_rows(_keys(1)[0], q, 0, n)
    layout = sampling._layout(sampling.BLOCK_BITS, inclusion_numerator(q))
    blocks = -(-n // layout.rows)
    assert sum(words) <= blocks * layout.record + 1 < n / 50
    assert abs(idx.size - n * q) < 5 * math.sqrt(n * q)


def test_large_rates_are_drawn_by_rows():
    """Above q = 1/64 row i is in iff its 32-bit half-word of the stream is below m."""
    key, q, n = _keys(1)[0], 0.1, 1000
    halves = AESCounter(key=key, counter=0).random_raw(n // 2).astype("<u8").view("<u4")
    expected = np.flatnonzero(halves < inclusion_numerator(q))
    np.testing.assert_array_equal(poisson_rows(key, q, 0, n), expected)


def test_rate_is_floor_q_2_32_and_never_above_q():
    for q in (1e-9, 256 / 30162, 1 / 64, 0.1, 1 - 1e-12):
        p = Fraction(inclusion_numerator(q), 2**32)
        assert p <= Fraction(q) < p + Fraction(1, 2**32)
    assert poisson_rows(_keys(1)[0], 1e-10, 0, 10**6).size == 0   # m = 0: p = 0


def test_the_draw_leaves_the_accounting_unchanged(monkeypatch):
    """A small-batch fit certifies the same noise and spend whichever draw it uses: the
    accountant reads the public q and the steps, not the sampler."""
    from sklearn.datasets import make_classification

    from skdp import DPSGDClassifier

    X, y = make_classification(n_samples=3000, n_features=4, random_state=0)
    kw = dict(epsilon=1.0, delta=1e-5, sample_rate=0.01, epochs=1, data_norm=1.0,
              random_state=0)
    by_blocks = DPSGDClassifier(**kw).fit(X, y)
    monkeypatch.setattr(sampling, "_BLOCKS_MAX_NUMERATOR", 0)   # every batch by rows
    by_rows = DPSGDClassifier(**kw).fit(X, y)
    for name in ("sample_rate_", "n_steps_", "noise_multiplier_", "epsilon_spent_",
                 "delta_spent_"):
        assert getattr(by_blocks, name) == getattr(by_rows, name), name
    assert by_blocks.sample_rate_ == 0.01 and by_blocks.epsilon_spent_ <= 1.0
    assert not np.array_equal(by_blocks.coef_, by_rows.coef_)   # other batches


# -- several steps drawn together -----------------------------------------------------------

@pytest.mark.parametrize("n, q", [(1, 0.01), (1025, 1e-3), (30_162, 256 / 30_162),
                                  (30_162, 0.0155), (300_000, 1e-3), (5000, 0.1)])
@pytest.mark.parametrize("rounds", ["default", "one word"])
def test_steps_drawn_together_are_the_steps_drawn_one_by_one(n, q, rounds, request):
    """``poisson_samples`` and ``poisson_step_samples`` give exactly the samples of one
    ``poisson_sample`` a step and leave the stream in the same state, also through the
    rare paths (further rounds in most blocks with one word a round), past the last
    whole block and beyond the blocks drawn together (drawn a step at a time)."""
    import copy

    from randomgen import ChaCha

    if rounds == "one word":
        request.getfixturevalue("small_rounds")
    steps = 23
    alone_rng = np.random.Generator(ChaCha(seed=n))
    together_rng, stepped_rng = copy.deepcopy(alone_rng), copy.deepcopy(alone_rng)
    alone = [sampling.poisson_sample(n, q, alone_rng) for _ in range(steps)]
    together = sampling.poisson_samples(n, q, together_rng, steps)
    stepped = list(sampling.poisson_step_samples(n, q, stepped_rng, steps))
    assert len(together) == len(stepped) == steps
    for a, b, c in zip(alone, together, stepped):
        assert b.dtype == c.dtype == np.int64
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a)
    word = alone_rng.bit_generator.random_raw()
    assert together_rng.bit_generator.random_raw() == stepped_rng.bit_generator.random_raw() == word


def test_round_keys_are_the_aes_128_key_expansion():
    """FIPS-197 Appendix A.1 (key 2b7e1516...: last round key d014f9a8...) and the
    S-box entries of its 5.1.1 table; the installed randomgen is keyed from them."""
    key = np.frombuffer(bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"), dtype="<u8")
    schedule = sampling._round_keys(key[None])[0].view(np.uint8).tobytes().hex()
    assert schedule[32:64] == "a0fafe1788542cb123a339392a6c7605"   # round key 1
    assert schedule[-32:] == "d014f9a8c9ee2589e13f0cc8b6630ca6"     # round key 10
    box = sampling._sbox()
    assert (box[0x00], box[0x01], box[0x53], box[0xFF]) == (0x63, 0x7C, 0xED, 0x16)
    assert sorted(box.tolist()) == list(range(256))
    assert sampling._keys_by_state()


@pytest.mark.parametrize("by_state", [True, False])
def test_first_words_are_each_keys_stream(by_state, monkeypatch):
    """The words read for many keys at once (round keys set as the state, or each key
    seeded) are each key's stream from address 0, past the generator's buffer."""
    if not by_state:
        monkeypatch.setattr(sampling, "_keys_by_state", lambda: False)
    keys = _keys(40, seed=3)
    words = sampling._first_words(keys, 37)
    for key, row in zip(keys, words):
        np.testing.assert_array_equal(row, AESCounter(key=key, counter=0).random_raw(37))


def test_first_distinct_in_rows_is_first_distinct_row_by_row():
    """The rows' first distinct draws found together are ``first_distinct`` of each row
    (the same values, each at its first draw), and a row with too few is incomplete."""
    rng = np.random.default_rng(4)
    draws = rng.integers(0, 6, size=(500, 7))
    wanted = rng.integers(0, 8, size=500)
    chosen, complete = sampling._first_distinct_in_rows(draws, wanted)
    for row, want, mask, done in zip(draws, wanted, chosen, complete):
        expected = first_distinct(row.tolist(), int(want))
        assert done == (expected is not None)
        if expected is None:
            assert not mask.any()
            continue
        assert row[mask].tolist() == expected
        assert all(v not in row[:i] for i, v in zip(np.flatnonzero(mask), row[mask]))
    assert complete.any() and not complete.all()
