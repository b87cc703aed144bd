"""numpydoc validation of every public object: documented parameters and returns.

The public objects are the names in the ``__all__`` of skdp's public modules and the
public methods those classes define. Checked codes: GL08 (no docstring), PR01 (a
parameter not documented), PR02 (a documented parameter that does not exist) and
RT01 (no Returns section).
"""

import dataclasses
import importlib
import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc  # noqa: E402

PUBLIC_MODULES = ["skdp", "skdp.accounting", "skdp.audit", "skdp.base", "skdp.datasets",
                  "skdp.exceptions", "skdp.linear_model", "skdp.losses", "skdp.mechanisms",
                  "skdp.model_selection", "skdp.penalties", "skdp.research", "skdp.solvers",
                  "skdp.utils"]
CHECKED = {"GL08", "PR01", "PR02", "RT01"}


def _public_objects():
    seen, names = set(), []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            seen.add(id(obj))
            qualified = f"{obj.__module__}.{obj.__qualname__}"
            names.append(qualified)
            if inspect.isclass(obj):
                names += [f"{qualified}.{member}" for member, value in vars(obj).items()
                          if not member.startswith("_")
                          and inspect.isfunction(getattr(value, "fn", value))]
    return names


def _resolve(qualified):
    module_name, _, rest = qualified.partition(".")
    obj = importlib.import_module(module_name)
    for part in rest.split("."):
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(
            f"{obj.__name__}.{part}")
    return obj


def _dataclass_fields_documented(obj):
    """A dataclass documents its fields under Attributes (numpydoc asks for Parameters);
    fields it inherits from outside skdp (scikit-learn's Tags) are documented there."""
    if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj)):
        return False
    documented = {name.strip() for entry in ClassDoc(obj)["Attributes"]
                  for name in entry.name.split(",")}
    own = {field.name for field in dataclasses.fields(obj)
           if any(field.name in getattr(base, "__annotations__", {})
                  for base in obj.__mro__ if base.__module__.startswith("skdp"))}
    return own <= documented


@pytest.mark.parametrize("qualified", _public_objects())
def test_public_object_is_documented(qualified):
    result = numpydoc_validate.validate(qualified)
    errors = [(code, message) for code, message in result["errors"] if code in CHECKED]
    if errors and all(code == "PR01" for code, _ in errors) \
            and _dataclass_fields_documented(_resolve(qualified)):
        errors = []
    assert not errors, "\n".join(f"{code}: {message}" for code, message in errors)


def test_the_check_can_fail():
    def undocumented(alpha, beta):
        """Add two numbers."""
        return alpha + beta

    import skdp.utils
    skdp.utils._undocumented_for_test = undocumented
    try:
        codes = {code for code, _ in numpydoc_validate.validate(
            "skdp.utils._undocumented_for_test")["errors"]}
    finally:
        del skdp.utils._undocumented_for_test
    assert {"PR01", "RT01"} <= codes
