"""Prices from the providers' APIs (recorded answers: tests/fixtures/prices/SOURCES.md), the cache, the dated table
(data/prices.yml), and unknown where none knows."""

import json
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import ANY, Stubber

from tfprov import prices
from tfprov.prices import Item, PriceBook

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "prices"
TABLE = prices.load_table(ROOT / "data" / "prices.yml")
AWS = json.loads((FIXTURES / "aws-m5-large.json").read_text())
SKUS = json.loads((FIXTURES / "gcp-skus-a2.json").read_text())["response"]["skus"]
A2_MACHINE = json.loads((FIXTURES / "gcp-machine-type-a2-highgpu-1g.json").read_text())["response"]


class StubbedClients:
    """boto3 clients with Stubber: the answers queued per service, every call checked against what it expects."""

    def __init__(self):
        self.clients, self.stubbers = {}, {}

    def add(self, service, method, answer, expected=None):
        if service not in self.clients:
            client = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
            self.clients[service], self.stubbers[service] = client, Stubber(client)
            self.stubbers[service].activate()
        self.stubbers[service].add_response(method, answer, expected)

    def __call__(self, service, region):
        return self.clients[service]


def book(tmp_path, **kwargs):
    return PriceBook(tmp_path / "prices.json", TABLE, offline=False, **kwargs)


def test_aws_on_demand_from_the_price_list_api_with_the_filters_that_leave_one_product(tmp_path):
    clients = StubbedClients()
    expected = {"ServiceCode": "AmazonEC2", "MaxResults": 10, "Filters": [
        {"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in (
            ("instanceType", "m5.large"), ("regionCode", "us-east-1"), ("operatingSystem", "Linux"),
            ("tenancy", "Shared"), ("preInstalledSw", "NA"), ("capacitystatus", "Used"),
            ("licenseModel", "No License required"))]}
    clients.add("pricing", "get_products", AWS["get_products_response"], expected)
    price = book(tmp_path, aws_clients=clients).price(Item("aws", "us-east-1", "m5.large"))
    assert price == prices.Price(0.096, "AWS Price List API")
    clients.stubbers["pricing"].assert_no_pending_responses()


def test_aws_spot_is_the_highest_current_price_across_the_zones(tmp_path):
    clients = StubbedClients()
    clients.add("ec2", "describe_spot_price_history", AWS["describe_spot_price_history_response"],
                {"InstanceTypes": ["m5.large"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY})
    price = book(tmp_path, aws_clients=clients).price(Item("aws", "us-east-1", "m5.large", "spot"))
    assert price.hourly == 0.0437 and "Spot" in price.source


def test_an_answer_with_two_prices_is_not_guessed_from(tmp_path):
    product = json.loads(AWS["get_products_response"]["PriceList"][0])
    other = json.loads(json.dumps(product).replace("0.0960000000", "0.1200000000"))
    clients = StubbedClients()
    clients.add("pricing", "get_products", {"FormatVersion": "aws_v1",
                                            "PriceList": [json.dumps(product), json.dumps(other)]})
    # A type the dated table does not have either (m5.large is there, for a cluster's cache node).
    price = book(tmp_path, aws_clients=clients).price(Item("aws", "us-east-1", "m5.2xlarge"))
    assert price.hourly is None
    assert price.source == "unknown: not in data/prices.yml; API: 2 on-demand prices in the answer"


def test_an_unreachable_api_falls_back_to_the_dated_table_and_is_asked_once(tmp_path):
    calls = []

    def unreachable(service, region):
        calls.append(service)
        raise EndpointConnectionError(endpoint_url="https://pricing")

    prices_book = book(tmp_path, aws_clients=unreachable)
    gpu = prices_book.price(Item("aws", "us-east-1", "g4dn.xlarge"))
    assert gpu.hourly == 0.526 and gpu.source.startswith("table data/prices.yml (AWS Price List API")
    assert "2026-07-20" in gpu.source
    assert prices_book.price(Item("aws", "us-east-1", "p5.48xlarge")).hourly == 55.04
    assert calls == ["pricing"]  # not asked again for the second node
    unknown = prices_book.price(Item("aws", "us-east-1", "x9.huge"))
    assert unknown.hourly is None and "EndpointConnectionError" in unknown.source


def test_a_price_is_cached_until_it_is_stale(tmp_path):
    now = [1000.0]
    clients = StubbedClients()
    for _ in range(2):
        clients.add("pricing", "get_products", AWS["get_products_response"])
    item = Item("aws", "us-east-1", "m5.large")
    assert book(tmp_path, aws_clients=clients, now=lambda: now[0]).price(item).source == "AWS Price List API"
    again = book(tmp_path, aws_clients=clients, now=lambda: now[0] + 3600).price(item)  # a new process, same cache
    assert again == prices.Price(0.096, "AWS Price List API (cached)")
    now[0] += prices.CACHE_TTL_S["on-demand"] + 1
    assert book(tmp_path, aws_clients=clients, now=lambda: now[0]).price(item).source == "AWS Price List API"
    clients.stubbers["pricing"].assert_no_pending_responses()


class FakeSession:
    """google-auth's AuthorizedSession, answering from recordings; the SKU list in two pages."""

    def __init__(self):
        self.urls = []

    def get(self, url, params=None, timeout=None):
        self.urls.append((url, dict(params or {})))
        if "/machineTypes/" in url:
            body = A2_MACHINE
        elif not (params or {}).get("pageToken"):
            body = {"skus": SKUS[:1], "nextPageToken": "page-2"}
        else:
            body = {"skus": SKUS[1:]}
        return _Response(body)


class _Response:
    def __init__(self, body):
        self.body = body

    def raise_for_status(self):
        return None

    def json(self):
        return self.body


def test_gcp_prices_a_machine_type_from_its_cores_memory_and_gpus_skus(tmp_path):
    session = FakeSession()
    item = Item("gcp", "us-central1", "a2-highgpu-1g", zone="us-central1-a", project="my-project")
    price = book(tmp_path, gcp_api=prices.GcpApi(session)).price(item)
    assert price == prices.Price(3.673385, "Cloud Billing Catalog API")  # 12 x core + 85 GiB x RAM + 1 A100
    assert session.urls[0][0].endswith("/projects/my-project/zones/us-central1-a/machineTypes/a2-highgpu-1g")
    assert [params.get("pageToken") for url, params in session.urls[1:]] == [None, "page-2"]
    assert all(params["currencyCode"] == "USD" for _, params in session.urls[1:])


def test_gcp_spot_needs_the_preemptible_skus(tmp_path):
    item = Item("gcp", "us-central1", "a2-highgpu-1g", "spot", zone="us-central1-a", project="p")
    price = book(tmp_path, gcp_api=prices.GcpApi(FakeSession())).price(item)
    assert price.hourly is None
    assert "0 Preemptible SKUs named 'A2 Instance Core' in us-central1" in price.source


def test_gcp_types_whose_price_has_more_than_skus_come_from_the_table(tmp_path):
    item = Item("gcp", "us-central1", "a2-ultragpu-1g", zone="us-central1-a", project="p")
    price = book(tmp_path, gcp_api=prices.GcpApi(FakeSession())).price(item)
    assert price.hourly == 5.068798 and price.source.startswith("table data/prices.yml (Cloud Billing Catalog")


def test_an_n1_node_with_a_gpu_the_table_does_not_price_is_unknown_offline(tmp_path):
    prices_book = PriceBook(None, TABLE, offline=True)
    price = prices_book.price(Item("gcp", "us-central1", "n1-standard-8", accelerator="nvidia-tesla-t4",
                                   accelerator_count=1))
    assert price.hourly is None and price.source == "unknown: not in data/prices.yml; APIs off (TFPROV_PRICES_OFFLINE)"
    assert prices_book.price(Item("gcp", "us-central1", "n1-standard-8")).hourly == 0.379998


def test_spot_is_never_taken_from_the_table():
    price = PriceBook(None, TABLE, offline=True).price(Item("aws", "us-east-1", "g4dn.xlarge", "spot"))
    assert price.hourly is None and "Spot prices move hourly" in price.source


@pytest.mark.parametrize("provider", ["aws", "gcp"])
def test_the_table_is_dated_sourced_and_every_price_a_positive_number(provider):
    section = TABLE[provider]
    assert section["source"] and str(section["as_of"]).startswith("20")
    for region in section["regions"].values():
        for name, value in {**region["machines"], **(region.get("gpus") or {})}.items():
            assert isinstance(value, float | int) and value > 0, name
