"""The one place that turns ``random_state`` into random streams.

Two kinds of randomness never share a stream:

- **privacy noise** (and anything that must stay secret for the guarantee to hold,
  such as the Poisson sampling masks of DP-SGD): :func:`noise_generator`;
- **public randomness** (anything that does not depend on the data):
  :func:`public_generator` for randomness drawn alongside the noise, and
  :func:`check_rng` with a public seed of its own for randomness that is
  *published* (the random Fourier map of ``OutputPertSVM`` is drawn from
  ``check_rng(feature_random_state)``).

In reproducibility mode both streams of :func:`privacy_streams` are functions of
one seed: they share no output, but whoever finds the seed from the public
stream's output (an integer seed, by search) regenerates the noise. So nothing
published may be drawn from the public stream of a seed that draws noise.

With ``random_state=None`` (the default) privacy noise comes from a ChaCha20
stream keyed with 256 bits from ``secrets``, fresh for every call, so no
released value lets anyone regenerate it. An int, a ``RandomState`` or a
``Generator`` is *reproducibility mode*: the streams are a deterministic function
of it, two fits seeded alike share their noise (their spends do not compose), and
a model fitted this way must not be published together with its seed.
"""

import numbers
import secrets

import numpy as np

from ._docstrings import fill_doc

# Spawn keys that separate the streams derived from one seed.
_NOISE_KEY, _PUBLIC_KEY, _DATA_NORM_KEY = 0, 1, 2


def _is_seed(random_state):
    return isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)


def _check_random_state_type(random_state):
    if random_state is None or _is_seed(random_state) or isinstance(
            random_state, (np.random.Generator, np.random.RandomState)):
        return
    raise ValueError(
        f"random_state={random_state!r} cannot seed a random stream; pass None (fresh "
        "cryptographic noise, the default), an int, a numpy RandomState or a numpy "
        "Generator (reproducibility mode).")


def _seed_sequence(random_state):
    """The deterministic root of reproducibility mode.

    An int is used as entropy directly; a ``Generator`` or ``RandomState`` gives
    256 bits of its own output, so its state advances (two fits from one
    generator object differ, but ``sklearn.clone`` copies the object and with it
    the noise).
    """
    if _is_seed(random_state):
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=8, dtype=np.uint64)
    else:
        words = random_state.integers(0, 2**32, size=8, dtype=np.uint64)
    return np.random.SeedSequence([int(w) for w in words])


def _chacha(seed_sequence):
    # imported here: randomgen costs about 150 ms to import
    from randomgen import ChaCha

    return np.random.Generator(ChaCha(seed=seed_sequence, rounds=20))


def _aes_counter(seed_sequence):
    """AES-128 in counter mode (randomgen's ``AESCounter``, the Poisson sampler's
    generator), keyed from ``seed_sequence``: cryptographically secure like ChaCha20,
    and with the processor's AES instructions (``use_aesni``) its standard normals
    cost about 0.4x ChaCha20's (measured: 10^7 normals, interleaved). For a stream
    that draws many numbers (DP-SGD's noise on the coefficients at every step)."""
    from randomgen import AESCounter

    return np.random.Generator(AESCounter(seed=seed_sequence))


def privacy_streams(random_state):
    """Return ``(noise, public)``: two independent :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        ``None``: the noise stream is ChaCha20 keyed with 256 fresh bits from
        ``secrets`` and the public stream draws fresh entropy from the
        operating system. Anything else is reproducibility mode: both streams
        are derived from it, on separate branches of one
        :class:`numpy.random.SeedSequence`: they share no output, but both
        are functions of that one seed, so a seed found from the public
        stream's output (an integer, by search over candidates) regenerates
        the noise.

    Returns
    -------
    noise : numpy.random.Generator
        ChaCha20 (cryptographically secure) in every mode. Draw privacy noise,
        and secret randomness such as sampling masks, only from it; spawn
        children from it for separate secret streams.
    public : numpy.random.Generator
        For public randomness only. In reproducibility mode do not publish
        its output (see above): draw published randomness from a seed of its
        own with :func:`check_rng`.

    Examples
    --------
    >>> from skdp.utils import privacy_streams
    >>> noise, public = privacy_streams(0)
    >>> noise_again, _ = privacy_streams(0)
    >>> bool(noise.standard_normal() == noise_again.standard_normal())
    True
    """
    _check_random_state_type(random_state)
    if random_state is None:
        root = np.random.SeedSequence(secrets.randbits(256))
        return _chacha(root), np.random.default_rng()
    root = _seed_sequence(random_state)
    noise_seed, public_seed = (np.random.SeedSequence(root.entropy, spawn_key=(key,))
                               for key in (_NOISE_KEY, _PUBLIC_KEY))
    return _chacha(noise_seed), np.random.default_rng(public_seed)


_STREAM_DOC = {"stream_seed": """Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the pair of streams, read as :func:`privacy_streams` reads it."""}


@fill_doc(fragments=_STREAM_DOC)
def noise_generator(random_state):
    """The privacy-noise stream of :func:`privacy_streams` alone.

    %(stream_seed)s

    Returns
    -------
    noise : numpy.random.Generator
    """
    return privacy_streams(random_state)[0]


@fill_doc(fragments=_STREAM_DOC)
def public_generator(random_state):
    """The public stream of :func:`privacy_streams` alone.

    %(stream_seed)s

    Returns
    -------
    public : numpy.random.Generator
    """
    return privacy_streams(random_state)[1]


@fill_doc(fragments=_STREAM_DOC)
def data_norm_generator(random_state):
    """The noise stream of a private ``data_norm`` (``data_norm="private"``).

    ChaCha20 like :func:`noise_generator`, on a branch of its own: in
    reproducibility mode it shares no output with the fit's noise stream, so the
    choice of the bound and the fit's noise are independent draws, as their
    composition assumes. ``None`` keys it with fresh bits from ``secrets``.

    %(stream_seed)s

    Returns
    -------
    noise : numpy.random.Generator
    """
    _check_random_state_type(random_state)
    if random_state is None:
        return _chacha(np.random.SeedSequence(secrets.randbits(256)))
    root = _seed_sequence(random_state)
    return _chacha(np.random.SeedSequence(root.entropy, spawn_key=(_DATA_NORM_KEY,)))


def check_rng(random_state):
    """A :class:`numpy.random.Generator` for randomness that is not privacy noise.

    For tools that are not private mechanisms (audits, benchmarks, data splits of
    public data), and for public randomness that has a public seed of its own,
    unrelated to any noise seed (the random Fourier map of ``OutputPertSVM``,
    seeded by ``feature_random_state``). ``None`` draws fresh entropy from the
    operating system, a ``Generator`` is used as is, an int or a ``RandomState``
    seeds a new one.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of the randomness, as described above.

    Returns
    -------
    rng : numpy.random.Generator
    """
    _check_random_state_type(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(_seed_sequence(random_state))
    return np.random.default_rng(random_state)


def noise_independence(random_states):
    """Whether fits made with these ``random_state`` values drew independent noise.

    Parameters
    ----------
    random_states : iterable
        The ``random_state`` of every fit that a report composes.

    Returns
    -------
    independent : bool
        ``True`` when every fit used ``None`` (fresh cryptographic noise), or
        distinct int seeds.
    reason : str
        Why independence cannot be established (empty when it can).
    """
    random_states = list(random_states)
    if all(rs is None for rs in random_states):
        return True, ""
    seeds = [int(rs) for rs in random_states if _is_seed(rs)]
    others = [rs for rs in random_states if rs is not None and not _is_seed(rs)]
    if others:
        return False, (
            "some fits were seeded with a numpy Generator or RandomState; sklearn.clone "
            "copies it, so the clones draw the same noise and their spends do not compose")
    if len(set(seeds)) < len(seeds):
        return False, (
            "several fits share an integer random_state, so they drew the same noise and "
            "their spends do not compose (with shared noise, two releases can cancel it "
            "or tell neighbouring datasets apart)")
    return True, ""
