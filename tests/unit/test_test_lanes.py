"""tests/conftest.py's lists of tests that are not pure code name files and tests that exist: a renamed file or test
would otherwise fall back into make unit unnoticed (or, running ansible, fail it)."""

import ast
import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("tests_conftest", TESTS / "conftest.py")
lanes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lanes)


def _functions(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}


def test_every_listed_file_and_directory_exists():
    for path in [*lanes.FILES, *lanes.FILE_FIXTURES, *lanes.TESTS]:
        assert (TESTS / path).is_dir() if path.endswith("/") else (TESTS / path).is_file(), path


def test_every_listed_test_and_fixture_is_defined_where_it_is_listed():
    for path, names in lanes.TESTS.items():
        assert set(names) <= _functions(TESTS / path), path
    for path, fixtures in lanes.FILE_FIXTURES.items():
        assert set(fixtures) <= _functions(TESTS / path), path


def test_every_marker_is_a_lane_marker():
    listed = [*lanes.FILES.values(), *lanes.FIXTURES.values(), *(m for f in lanes.FILE_FIXTURES.values()
                                                                  for m in f.values()),
              *(m for t in lanes.TESTS.values() for m in t.values()), *lanes.FORBIDDEN.values()]
    assert set(listed) <= set(lanes.LANE_MARKERS)


def test_a_test_gets_the_markers_of_its_file_its_fixtures_and_its_name():
    assert lanes.markers_of("cloud/test_x.py", "test_y", ()) == {"servers"}
    assert lanes.markers_of("unit/test_report_page.py", "test_y", ("tmp_path", "project")) == {"e2e_local"}
    assert lanes.markers_of("unit/plugins/test_serving_probe.py", "test_y", ("url",)) == {"servers"}
    assert lanes.markers_of("unit/test_other.py", "test_y", ("url",)) == set()
    assert lanes.markers_of("unit/test_cli.py", "test_run_against_an_empty_inventory_is_not_a_success", ()) == {
        "e2e_local"}
    assert lanes.markers_of("unit/test_cli.py", "test_help_lists_the_commands", ()) == set()
