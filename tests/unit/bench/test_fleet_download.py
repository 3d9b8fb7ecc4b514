"""The download benchmark's bookkeeping: what the gateway's caches fetched from outside, and its summary."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).parents[3] / "bench"
sys.path.insert(0, str(BENCH))  # it imports its sibling converge_scale
SPEC = importlib.util.spec_from_file_location("fleet_download", BENCH / "fleet_download.py")
fleet_download = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fleet_download)

# apt-cacher-ng's log: time|I (fetched from the mirror) or O (served)|bytes|client|path
EARLIER = "1795807987|I|999999|127.0.0.1|deb.debian.org/debian/pool/main/x/x.deb\n"
RUN = ("1795807991|I|151287|127.0.0.1|deb.debian.org/debian/dists/bookworm/InRelease\n"
       "1795807991|O|151315|127.0.0.1|deb.debian.org/debian/dists/bookworm/InRelease\n"
       "1795807992|I|53344|127.0.0.1|deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb\n"
       "1795807992|O|53335|127.0.0.1|deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb\n"
       "1795807993|O|53335|127.0.0.1|deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb\n"
       "not a transfer line\n")


def test_the_apt_caches_log_counts_only_this_runs_transfers(tmp_path: Path):
    log = tmp_path / "apt-cacher.log"
    log.write_text(EARLIER + RUN)
    assert fleet_download.apt_cache_bytes(log, len(EARLIER)) == {
        "from_debian_bytes": 151287 + 53344, "debian_served_bytes": 151315 + 2 * 53335}
    assert fleet_download.apt_cache_bytes(tmp_path / "none.log", 0) == {"from_debian_bytes": 0,
                                                                          "debian_served_bytes": 0}


def run(nodes: int, pypi: int, debian: int, wall: float, rc: int = 0) -> dict:
    return {"nodes": nodes, "rc": rc, "wall_s": wall, "from_pypi_bytes": pypi, "from_debian_bytes": debian,
            "from_outside_bytes": pypi + debian}


def test_summary_compares_everything_fetched_from_outside_with_one_nodes():
    runs = [run(1, 1000, 100, 80.0), run(4, 1000, 130, 170.0), run(8, 1000, 150, 330.0)]
    out = fleet_download.summary(runs)
    assert out["from_outside_8_over_1"] == round(1150 / 1100, 3) and out["from_pypi_8_over_1"] == 1.0
    assert out["from_outside_8_within_5_percent_of_1"] is True  # 4.5 % more
    assert out["from_outside_8_without_cache_bytes"] == 8 * 1100
    assert out["wall_4_over_1"] == 2.12 and out["wall_4_within_2x_1"] is False
    runs[2] = run(8, 1000, 160, 330.0)  # 5.5 % more: Debian's share counts
    assert fleet_download.summary(runs)["from_outside_8_within_5_percent_of_1"] is False
    assert fleet_download.summary([run(1, 1000, 100, 80.0, rc=1)]) == {}


def test_a_cache_node_comes_first_beside_the_usual_layout_of_n_nodes():
    assert fleet_download.up_args(4, False) == ["--nodes", "4", "--network", "private"]
    assert fleet_download.up_args(4, True) == ["--nodes", "5", "--roles", "cache,chief,worker,worker,ps",
                                               "--network", "private"]
