"""Published variants that are NOT differentially private, for research only.

Nothing here is used by the private estimators; every fit warns with
:class:`~skdp.exceptions.PrivacyLeakWarning` and reports ``epsilon_spent_ = inf``.
"""

from ._napp import ResearchNAPPLasso, ResearchNAPPLassoClassifier

__all__ = ["ResearchNAPPLasso", "ResearchNAPPLassoClassifier"]
