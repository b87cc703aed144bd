"""What the smooth solvers require of a loss.

A loss may also have ``dz_accurate(z, y, z_error)``, its derivative in double-double
with an error bound: the certificate's fallback needs it
(:mod:`skdp.solvers._accurate`); without it the cheap certificate alone decides.
"""

# the value and the first two derivatives in the linear predictor z, vectorised
REQUIRED_LOSS_ATTRIBUTES = ("loss", "dz", "d2z")


def check_loss(loss, solver):
    """Raise before any work when ``loss`` lacks what ``solver`` needs.

    Parameters
    ----------
    loss : object
        A loss of :mod:`skdp.losses` (or any object with the same methods).
    solver : str
        Name of the solver, for the message.

    Raises
    ------
    TypeError
        When one of :data:`REQUIRED_LOSS_ATTRIBUTES` is missing.
    """
    missing = [name for name in REQUIRED_LOSS_ATTRIBUTES if not callable(getattr(loss, name,
                                                                                  None))]
    if missing:
        raise TypeError(f"{solver} needs a loss with {', '.join(missing)} (the value and the "
                        f"derivatives in the linear predictor); {type(loss).__name__} has "
                        "not.")
