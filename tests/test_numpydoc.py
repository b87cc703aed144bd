"""Every public object of skdp passes numpydoc's checks of its parameters and returns.

The objects are found, not listed: each name in the ``__all__`` of skdp and of its
public modules (those whose dotted path has no part starting with ``_``), the public
names a public module without ``__all__`` defines, and the public methods and
properties those classes define in skdp (not the ones scikit-learn gives them). A new
public object is therefore checked as soon as it is exported.

Checked codes: GL08 (no docstring), PR01 (a parameter not documented), PR02 (a
documented parameter that does not exist), PR07 (a documented parameter without a
description) and RT01 (no Returns section in a function that returns a value).
"""

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc  # noqa: E402

import skdp  # noqa: E402

# numpydoc reports RT01 only for a plain function whose body returns a value: never for
# a class, a property or a function that returns None (``__init__`` is not collected).
CHECKED = ("GL08", "PR01", "PR02", "PR07", "RT01")


def _public_modules():
    """skdp and its importable modules with no private part in their dotted path."""
    names = ["skdp"] + [info.name for info in pkgutil.walk_packages(skdp.__path__, "skdp.")]
    return [importlib.import_module(name) for name in names
            if not any(part.startswith("_") for part in name.split("."))]


def _exported(module):
    """The public objects of a module: its ``__all__``, else the public names it defines."""
    if hasattr(module, "__all__"):
        return [getattr(module, name) for name in module.__all__]
    return [value for name, value in vars(module).items()
            if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__]


def _unwrap(member):
    """The function behind a class member, or None for a member that is not a method.

    ``staticmethod`` and ``classmethod`` hold it in ``__func__``, scikit-learn's
    ``available_if`` in ``fn``. Validating the plain function keeps numpydoc's RT01 for
    class methods, which it skips for bound methods. A property is returned as is.
    """
    if isinstance(member, property):
        return member
    function = getattr(member, "__func__", None) or getattr(member, "fn", None) or member
    return function if inspect.isfunction(function) else None


def _public_objects():
    """``(name, object)`` of every public object, each object once."""
    exported = [obj for module in _public_modules() for obj in _exported(module)]
    public_classes = {id(obj) for obj in exported if inspect.isclass(obj)}
    seen, found = set(), []

    def add(name, obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            found.append((name, obj))

    for obj in exported:
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # constants (``__version__``, tolerances) have no docstring to check
        qualified = f"{obj.__module__}.{obj.__qualname__}"
        add(qualified, obj)
        if not inspect.isclass(obj):
            continue
        defined = set()   # a member overridden lower in the MRO is not the class's
        for cls in obj.__mro__:
            if not cls.__module__.startswith("skdp"):
                continue  # inherited from scikit-learn or the standard library
            for member_name, member in vars(cls).items():
                method = _unwrap(member)
                if member_name.startswith("_") or method is None or member_name in defined:
                    continue
                defined.add(member_name)
                if cls is not obj and id(cls) in public_classes:
                    continue  # checked under the public class that defines it
                add(f"{qualified}.{member_name}", method)
    return found


def _fields_documented_as_attributes(obj, undocumented):
    """Whether the undocumented parameters are dataclass fields documented elsewhere.

    A dataclass describes its fields under Attributes, where numpydoc looks for them
    under Parameters: a field listed under Attributes counts as documented. A field
    inherited from a dataclass outside skdp (scikit-learn's ``Tags``) is documented
    there. Any other undocumented parameter still fails.
    """
    if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj)):
        return False
    attributes = {name.strip() for entry in ClassDoc(obj)["Attributes"]
                  for name in entry.name.split(",")}
    own = {name for base in obj.__mro__
           if base is obj or base.__module__.startswith("skdp")
           for name in inspect.get_annotations(base)}
    foreign = {field.name for field in dataclasses.fields(obj)} - own
    return undocumented <= attributes | foreign


def numpydoc_failures(obj):
    """numpydoc's errors of the checked codes for ``obj``, as readable lines."""
    doc = numpydoc_validate.get_doc_object(obj)
    validator = numpydoc_validate.Validator(doc)
    result = numpydoc_validate.validate(doc)
    errors = [(code, message) for code, message in result["errors"] if code in CHECKED]
    undocumented = set(validator.signature_parameters) - set(validator.doc_parameters)
    if undocumented and _fields_documented_as_attributes(obj, undocumented):
        errors = [(code, message) for code, message in errors if code != "PR01"]
    return [f"{code}: {message}" for code, message in errors]


PUBLIC_OBJECTS = _public_objects()


@pytest.mark.parametrize("obj", [pytest.param(obj, id=name) for name, obj in PUBLIC_OBJECTS])
def test_numpydoc(obj):
    failures = numpydoc_failures(obj)
    assert not failures, "numpydoc:\n  " + "\n  ".join(failures)


def test_collects_every_public_module():
    names = {name for name, _ in PUBLIC_OBJECTS}
    assert len(names) == len(PUBLIC_OBJECTS)
    for expected in ("skdp.exceptions.PrivacyBudgetError", "skdp.accounting._gaussian",
                     "skdp.penalties.make_penalty", "skdp.datasets._loaders.load_adult"):
        assert any(name.startswith(expected) for name in names), expected


def _summary_only(alpha, beta):
    """Add two numbers."""
    return alpha + beta


def _parameters_without_descriptions(alpha, beta):
    """Add two numbers.

    Parameters
    ----------
    alpha : float
    beta : float

    Returns
    -------
    float
        Their sum.
    """
    return alpha + beta


def _undocumented(alpha):
    return alpha


def test_the_check_fails_on_a_docstring_without_parameters_or_returns():
    failures = numpydoc_failures(_summary_only)
    assert {line[:4] for line in failures} == {"PR01", "RT01"}
    assert [line[:4] for line in numpydoc_failures(_parameters_without_descriptions)] \
        == ["PR07", "PR07"]
    assert [line[:4] for line in numpydoc_failures(_undocumented)] == ["GL08"]


@dataclasses.dataclass
class _Pair:
    """Two numbers.

    Attributes
    ----------
    first : float
        The first.
    """

    first: float
    second: float


@dataclasses.dataclass
class _DocumentedPair(_Pair):
    """Two numbers, both described.

    Attributes
    ----------
    second : float
        The second; the first is described by the base class, not here.
    """


def test_dataclass_fields_count_only_when_listed_under_attributes():
    assert [line[:4] for line in numpydoc_failures(_Pair)] == ["PR01"]
    assert "second" in numpydoc_failures(_Pair)[0]
    # ``first`` is declared outside skdp, so it counts as documented where it is declared
    assert numpydoc_failures(_DocumentedPair) == []
