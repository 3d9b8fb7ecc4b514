"""tfprov up aws|gcp --spec prints the price of every node and of the cluster before anything is created, and
--max-hourly-cost refuses a spec above it (or one it cannot price) before the plan runs; fleet status's cost so far;
the run page's cost section."""

import pytest
import yaml
from test_cli_clouds import SPEC, FakeRunner, run

from tfprov import clouds, cost, fleet_status, report_page, terminal
from tfprov.cli import build_parser
from tfprov.prices import PriceBook


@pytest.fixture
def spec_file(tmp_path):
    spec = {**SPEC, "roles": {"chief": {"count": 1, "type": "g4dn.xlarge"},
                              "worker": {"count": 2, "type": "g4dn.xlarge"},
                              "ps": {"count": 1, "type": "m5.xlarge"}}, "idle_stop_minutes": 30}
    path = tmp_path / "demo.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture
def fake(tmp_path, monkeypatch):
    runner = FakeRunner(tmp_path)
    monkeypatch.setattr(clouds, "run_plan", runner)
    monkeypatch.setenv("COLUMNS", "200")
    return runner


def test_up_prints_each_node_and_the_cluster_per_hour_before_creating_anything(capsys, spec_file, fake,
                                                                              monkeypatch):
    before = []

    def noted(plan, root, options, progress):
        before.append(capsys.readouterr().out)  # what was printed before the plan ran
        return fake(plan, root, options, progress)
    monkeypatch.setattr(clouds, "run_plan", noted)
    rc, _, err = run(capsys, ["up", "aws", "--spec", str(spec_file)])
    assert rc == 0, err
    [printed] = before
    for line in ("demo-chief-0", "demo-worker-1", "g4dn.xlarge", "$0.526", "$0.192", "table data/prices.yml"):
        assert line in printed
    assert "cluster: $1.770 per hour" in printed  # 3 x 0.526 + 0.192
    # the guard covers chief and workers: 12 h x 1.578 without it, 30 min with it
    assert ("an idle night (12 h) of the guarded nodes would cost $18.94 without the idle-stop guard; with "
            "idle_stop_minutes 30, about $0.789") in printed


def test_max_hourly_cost_refuses_above_it_and_nothing_runs(capsys, spec_file, fake):
    rc, out, err = run(capsys, ["up", "aws", "--spec", str(spec_file), "--max-hourly-cost", "1.5"])
    assert rc == 2 and fake.calls == []
    assert err.strip() == ("tfprov: error: the cluster costs $1.770 per hour, above --max-hourly-cost $1.500: nothing "
                           "was created (fewer or smaller nodes, spot: true, or a higher limit)")
    assert "cluster: $1.770 per hour" in out  # the user sees what they would have paid
    rc, _, _ = run(capsys, ["up", "aws", "--spec", str(spec_file), "--max-hourly-cost", "$2"])
    assert rc == 0 and len(fake.calls) == 1


def test_max_hourly_cost_refuses_a_spec_it_cannot_price(capsys, tmp_path, fake):
    spec = {**SPEC, "spot": True}
    path = tmp_path / "spot.yml"
    path.write_text(yaml.safe_dump(spec))
    rc, out, err = run(capsys, ["up", "aws", "--spec", str(path), "--max-hourly-cost", "100"])
    assert rc == 2 and fake.calls == []
    assert "the price of demo-chief-0, demo-ps-0 is unknown, so the limit cannot be checked" in err
    assert "unknown: no Spot price in the table" in out


def test_max_hourly_cost_is_for_cloud_specs_only(capsys):
    rc, _, err = run(capsys, ["up", "local", "--max-hourly-cost", "3"])
    assert rc == 2 and err.startswith("tfprov: error: --max-hourly-cost is for tfprov up aws|gcp")


@pytest.mark.parametrize("value, words", [("0", "must be above 0"), ("cheap", "'cheap' is not an amount of dollars")])
def test_max_hourly_cost_must_be_an_amount(capsys, value, words):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["up", "aws", "--spec", "x.yml", "--max-hourly-cost", value])
    assert exited.value.code == 2 and words in capsys.readouterr().err


def test_fleet_status_shows_a_cloud_nodes_uptime_and_cost_so_far():
    host = {"status": "ok", "data": {"installed": {}, "uptime_s": 5400.0,
                                     "node": {"provider": "aws", "type": "g4dn.xlarge", "zone": "us-east-1b",
                                              "market": "on-demand"}}}
    local = {"status": "ok", "data": {"installed": {}, "uptime_s": 99999.0, "node": {"provider": "local"}}}
    book = PriceBook(None, cost.load_table(cost.project_root() / "data" / "prices.yml"), offline=True)
    rows = fleet_status.rows({"hosts": {"gpu-1": host, "tfprov-local-1": local}}, [], book)
    assert rows[0]["cost_so_far"] == round(0.526 * 1.5, 4) and fleet_status.uptime(rows[0]) == "90 min"
    assert terminal.cost_cell(rows[0]) == "$0.789 ($0.526/h g4dn.xlarge)"
    assert fleet_status.uptime(rows[1]) == "-" and terminal.cost_cell(rows[1]) == "-"  # the host's clock


def test_the_run_page_prices_the_runs_cloud_nodes_from_the_table():
    report = {"plan": "node", "status": "successful", "seconds": 1800, "hosts": {
        "gpu-1": {"status": "ok", "failed_tasks": [], "data": {"node": {
            "provider": "aws", "type": "g4dn.xlarge", "zone": "us-east-1a", "market": "on-demand"}}},
        "gpu-2": {"status": "ok", "failed_tasks": [], "data": {"node": {
            "provider": "gcp", "type": "n9-mystery-4", "zone": "us-central1-a", "market": "on-demand"}}},
        "tfprov-local-1": {"status": "ok", "failed_tasks": [], "data": {"node": {"provider": "local"}}}}}
    found = cost.run_cost(report)
    assert [n["host"] for n in found["nodes"]] == ["gpu-1", "gpu-2"]
    assert found["run"] == 0.263 and found["unknown"] == 1
    html = report_page.render(report)
    assert "the run's nodes: $0.526 per hour; this run's 1800.0 s: $0.263 (some prices unknown: not counted)" in html
