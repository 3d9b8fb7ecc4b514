import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.filter.fleet import (
    fleet_batches,
    fleet_budget,
    fleet_serial,
    fleet_stop_reason,
    fleet_versions,
)

HOSTS = [f"n{i}" for i in range(1, 7)]


def test_serial_is_the_canary_then_the_batches():
    assert fleet_serial(2) == [1, 2]
    assert fleet_serial("25%", canary=0) == ["25%"]
    assert fleet_serial("1,2,5", canary="1") == [1, 1, 2, 5]
    assert fleet_serial([2, "50%"], canary=3) == [3, 2, "50%"]


@pytest.mark.parametrize("batch, canary, words", [
    ("0", 1, "at least 1"), ("abc", 1, "a number of hosts"), ("150%", 1, "between 1% and 100%"),
    ("2", -1, "a number of hosts"), (",", 1, "is empty"), (True, 1, "a number of hosts")])
def test_serial_refuses_what_ansible_could_not_use(batch, canary, words):
    with pytest.raises(AnsibleFilterError, match=words):
        fleet_serial(batch, canary)


def test_batches_slice_as_ansible_does():
    # canary 1, then 2 and 2, the last size repeating: the integration test's layout.
    assert fleet_batches(HOSTS, [1, 2]) == {"n1": 1, "n2": 2, "n3": 2, "n4": 3, "n5": 3, "n6": 4}
    # 25% of 6 is 1 (rounded down, at least 1); 50% is 3.
    assert fleet_batches(HOSTS, ["50%"]) == {"n1": 1, "n2": 1, "n3": 1, "n4": 2, "n5": 2, "n6": 2}
    assert set(fleet_batches(HOSTS, [1, "25%"]).values()) == {1, 2, 3, 4, 5, 6}
    assert fleet_batches(HOSTS, []) == dict.fromkeys(HOSTS, 1)


def test_budget_for_the_whole_fleet():
    assert fleet_budget(0, 6, 0, 2) == ""
    assert "over the fleet's budget of 0" in fleet_budget(1, 6, 1, 2)
    assert fleet_budget(1, 6, 1, 1, max_fail=1, batch_max_fail=100) == ""
    assert "budget of 2" in fleet_budget(3, 10, 1, 2, max_fail="25%", batch_max_fail="100%")
    # What tfprov fleet update passes by default.
    assert "over the fleet's budget of 0" in fleet_budget(1, 6, 1, 2, max_fail="0", batch_max_fail="0%")
    assert fleet_budget(0, 6, 0, 2, max_fail="0%", batch_max_fail="0%") == ""


def test_budget_per_batch_even_when_the_fleet_allows_more():
    # A canary that failed alone is a fully failed batch: allowed here only when the batch budget says so.
    assert "1 of 1 host(s) of this batch" in fleet_budget(1, 6, 1, 1, max_fail=5, batch_max_fail=50)
    assert fleet_budget(1, 6, 1, 2, max_fail=5, batch_max_fail="50%") == ""
    assert "2 of 3" in fleet_budget(2, 6, 2, 3, max_fail=5, batch_max_fail=50)


def test_budget_refuses_bad_settings():
    with pytest.raises(AnsibleFilterError, match="tfprov_fleet_max_fail"):
        fleet_budget(0, 1, 0, 1, max_fail="lots")


def test_versions_keep_what_the_report_shows():
    installed = {"python": "3.11.2", "tensorflow": {"version": "2.21.0", "package": "tensorflow-cpu"},
                 "driver": {}, "cuda": {"version": "12.5.82", "source": "pip"}}
    assert fleet_versions(installed) == {"tensorflow": "2.21.0", "cuda": "12.5.82", "cudnn": None, "driver": None,
                                         "python": "3.11.2"}
    assert fleet_versions(None)["tensorflow"] is None


def test_stop_reason_counts_rescued_and_unreachable_nodes_of_the_fleet_and_of_this_batch():
    hostvars = {host: {"__fleet_batch": batch} for host, batch in zip(HOSTS, [0, 1, 1, 2, 2, 2], strict=True)}
    hostvars["n2"]["__fleet_failure"] = "quick GPU check failed"
    assert fleet_stop_reason(hostvars, HOSTS, HOSTS, 1, max_fail=1, batch_max_fail=50) == ""
    # n3 unreachable: gone from the play's active hosts, failed like n2; batch 1 is then 2 of 2
    stop = fleet_stop_reason(hostvars, HOSTS, [h for h in HOSTS if h != "n3"], 1, max_fail=2, batch_max_fail=50)
    assert stop == "2 of 2 host(s) of this batch failed, over tfprov_fleet_batch_max_fail 50%"
    over = fleet_stop_reason(hostvars, HOSTS, [h for h in HOSTS if h != "n3"], 1, max_fail=1, batch_max_fail=100)
    assert over.startswith("2 host(s) failed, over the fleet's budget of 1")
    # an earlier batch's failure counts for the fleet, not for this batch
    assert fleet_stop_reason(hostvars, HOSTS, HOSTS, 2, max_fail=1, batch_max_fail=0) == ""
