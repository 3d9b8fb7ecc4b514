"""The matrix's distributed section: which tf_keras goes beside a TensorFlow (module_utils and the filter)."""

import pytest
from ansible_collections.tfprov.gpu.plugins.filter.compat import FilterModule, legacy_keras
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import (
    legacy_keras_version,
    load_matrix,
    version_tuple,
)

MATRIX = {
    "tensorflow": {"2.15": {}, "2.16": {}, "2.21": {}},
    "distributed": {"legacy_keras": {"package": "tf_keras", "since_tensorflow": "2.16",
                                     "releases": {"2.16": "2.16.0", "2.21": "2.21.0"}}},
}


@pytest.mark.parametrize(("tf_version", "expected"), [
    ("2.21", "2.21.0"), ("2.21.0", "2.21.0"), ("2.16.2", "2.16.0"), ("latest", "2.21.0"),
    ("2.15", None), ("2.15.1", None),   # tf.keras is still Keras 2 there
    ("2.30", None), ("", None), (None, None),
])
def test_legacy_keras_version(tf_version, expected):
    assert legacy_keras_version(MATRIX, tf_version) == expected


def test_no_distributed_section_means_no_legacy_keras():
    assert legacy_keras_version({"tensorflow": {"2.21": {}}}, "2.21") is None


def test_real_matrix_has_tf_keras_for_every_keras3_tensorflow():
    matrix = load_matrix()
    section = matrix["distributed"]
    assert section["legacy_keras"]["package"] == "tf_keras"
    assert "scikit-learn" in section["check_packages"]
    since = version_tuple(section["legacy_keras"]["since_tensorflow"])
    for tf in matrix["tensorflow"]:
        release = legacy_keras_version(matrix, tf)
        if version_tuple(tf) < since:
            assert release is None, tf
        else:
            assert release and release.startswith(tf + "."), (tf, release)


def test_filter_reads_the_real_matrix():
    assert FilterModule().filters()["legacy_keras"] is legacy_keras
    assert legacy_keras("2.21.0") == "2.21.0"
    assert legacy_keras("2.20") == "2.20.1"
    assert legacy_keras("2.14") is None
