"""The schema's preprocessing: public, sparse, and exactly what the schema declares."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from skdp._schema import MISSING_LEVEL, Schema, SchemaError
from skdp.model_selection import check_public_preprocessing

SPEC = {"label": {"name": "y", "classes": ["no", "yes"]},
        "columns": {"age": {"bounds": [20, 100]},
                    "stay": {"bounds": [0, 10], "impute": 5},
                    "ward": {"categories": ["a", "b", "c"]},
                    "sex": {"categories": ["F", "M"], "impute": "F"}},
        "ignore": ["visit_id"]}


def test_preprocessing_is_public_sparse_and_as_declared():
    schema = Schema.from_dict(SPEC)
    check_public_preprocessing(schema.preprocessor())          # raises if not public
    frame = pd.DataFrame({"age": [60.0, np.nan, 150.0], "stay": [np.nan, 2.0, 10.0],
                          "ward": ["b", np.nan, "c"], "sex": [np.nan, "M", "F"]})
    out = schema.preprocessor().fit_transform(frame)
    assert sp.issparse(out)
    expected = np.array([
        # age: (x-20)/80, missing -> lower bound, clipped; stay: x/10, missing -> 5
        # ward: a b c (missing); sex: F M, missing -> declared "F"
        [0.5, 0.5, 0, 1, 0, 0, 1, 0],
        [0.0, 0.2, 0, 0, 0, 1, 0, 1],
        [1.0, 1.0, 0, 0, 1, 0, 1, 0]])
    np.testing.assert_allclose(out.toarray(), expected)
    assert schema.categorical["ward"] == (("a", "b", "c", MISSING_LEVEL), MISSING_LEVEL)
    assert np.all(np.linalg.norm(out.toarray(), axis=1) <= schema.row_norm_bound())
    assert schema.row_norm_bound() == 2.0


@pytest.mark.parametrize("columns, match", [
    ({"age": {"bounds": [5, 5]}}, "lower < upper"),
    ({"age": {"bounds": [0, 9], "categories": ["x"]}}, "exactly one"),
    ({"age": {}}, "exactly one"),
    ({"ward": {"categories": ["a", "a"]}}, "listed twice"),
    ({}, "no feature column"),
])
def test_a_bad_schema_says_what_to_fix(columns, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"label": SPEC["label"], "columns": columns})
