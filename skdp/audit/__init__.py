"""Empirical privacy audits usable on any skdp estimator or noise mechanism.

An audit can refute a privacy claim (a lower bound above the claimed epsilon) but
never certify it; see the audit guide in ``docs/``.
"""

from ._audit import (
    AuditResult,
    audit_estimator,
    audit_mechanism,
    audit_statistics,
    clopper_pearson,
    neighbouring_datasets,
)

__all__ = [
    "AuditResult",
    "audit_estimator",
    "audit_mechanism",
    "audit_statistics",
    "clopper_pearson",
    "neighbouring_datasets",
]
