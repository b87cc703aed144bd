import numpy as np
import pandas as pd
import pytest

from skdp.utils._groups import (check_groups, person_relation, person_row_weights,
                                rows_per_person)


def test_groups_become_codes_of_any_labels():
    codes = check_groups(pd.Series(["b", "a", "b", "c", "b"]), 5)
    assert codes.tolist() == [1, 0, 1, 2, 1]
    assert rows_per_person(codes).tolist() == [3, 1, 3, 1, 3]


@pytest.mark.parametrize("labels", [
    np.random.default_rng(0).integers(-5, 40, size=300),
    np.random.default_rng(1).integers(0, 9, size=300).astype(np.uint8),
    np.random.default_rng(2).integers(0, 30, size=300) * 0.25,
    np.random.default_rng(3).random(300) < 0.5])
@pytest.mark.parametrize("as_series", [False, True])
def test_numeric_labels_get_the_codes_of_the_same_labels_as_objects(labels, as_series):
    """Numbers are sorted as they are (fast), with the codes the object path gives."""
    expected = np.unique(np.asarray(labels, dtype=object), return_inverse=True)[1]
    given = pd.Series(labels) if as_series else labels
    np.testing.assert_array_equal(check_groups(given, 300), expected)
    np.testing.assert_array_equal(check_groups(labels.astype(object), 300), expected)


@pytest.mark.parametrize("groups, match", [
    ([1, None, 2], "missing"), ([1, 2], "another number of labels"),
    ([1.0, np.nan, 2.0], "missing"), (np.array([1.0, np.nan, 2.0]), "missing"),
    (pd.Series([1.0, 2.0, np.nan]), "missing"), ([[1, 1], [2, 2], [3, 3]], "1-D"),
    (np.array([[1], [2]]), "another number of labels"),
    (np.array([1, "a", 2], dtype=object), "one type")])
def test_malformed_groups_are_refused(groups, match):
    with pytest.raises(ValueError, match=match) as error:
        check_groups(groups, 3)
    assert "3" not in str(error.value) and "2 labels" not in str(error.value)  # no count


def test_a_persons_weights_sum_to_at_most_the_bound():
    rng = np.random.default_rng(0)
    codes = check_groups(rng.integers(0, 40, size=500), 500)
    for bound in (1, 2.5, 7):
        weights = person_row_weights(codes, bound)
        totals = np.bincount(codes, weights=weights)
        sizes = np.bincount(codes)
        assert totals == pytest.approx(np.minimum(sizes, bound))
        assert weights.max() <= 1.0


def test_relations():
    assert person_relation("add_remove") == "add_remove_person"
    assert person_relation("replace") == "replace_person"
