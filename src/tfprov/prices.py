"""The hourly price of a cloud node, from the provider's own price API, cached, else a dated table in data/.

AWS: the Price List API (boto3 `pricing`, GetProducts) for on-demand; EC2's Spot price history for Spot.
Google: the Cloud Billing Catalog (Compute Engine's SKUs, through google-auth) priced by the machine type's vCPUs,
memory and GPUs (Compute Engine's machineTypes.get). A price neither the API nor the table knows is unknown: shown
as unknown, never guessed. Why not a library: none of the maintained ones prices both clouds from their own APIs
(the providers' SDKs only fetch; the arithmetic over SKUs is ours).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

CACHE_TTL_S = {"on-demand": 7 * 86400, "spot": 3600}  # list prices change monthly at most; Spot's hourly
AWS_PRICING_REGION = "us-east-1"  # the Price List API's endpoint; it answers for every region
GCP_COMPUTE_SERVICE = "services/6F81-5844-456A"  # Compute Engine in the Cloud Billing Catalog
GCP_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


@dataclass(frozen=True)
class Item:
    """One node as the price APIs see it."""

    provider: str  # aws | gcp
    region: str
    type: str
    market: str = "on-demand"  # on-demand | spot
    accelerator: str = ""  # GCP N1: the attached GPU type (nvidia-tesla-t4); A2/G2/A3 carry theirs
    accelerator_count: int = 0
    zone: str = ""
    project: str = ""

    def key(self) -> str:
        return "/".join(str(v) for v in (self.provider, self.region, self.type, self.market, self.accelerator,
                                         self.accelerator_count))


@dataclass(frozen=True)
class Price:
    hourly: float | None  # USD; None: unknown
    source: str  # where it came from, or why it is unknown


class PriceError(Exception):
    """The API answered, but not with one price for this item."""


def load_table(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def table_price(item: Item, table: dict) -> Price | None:
    """The dated table's on-demand price (machine plus attached GPUs on GCP), or None."""
    if item.market != "on-demand":
        return None
    provider = table.get(item.provider) or {}
    region = (provider.get("regions") or {}).get(item.region) or {}
    machine = (region.get("machines") or {}).get(item.type)
    if machine is None:
        return None
    gpu = 0.0
    if item.accelerator and item.accelerator_count:
        per_gpu = (region.get("gpus") or {}).get(item.accelerator)
        if per_gpu is None:
            return None
        gpu = per_gpu * item.accelerator_count
    return Price(round(machine + gpu, 6), f"table data/prices.yml ({provider.get('source')}, {provider.get('as_of')})")


# --- AWS -------------------------------------------------------------------------------------------------------
def aws_filters(item: Item) -> list[dict]:
    """The filters that leave exactly one product: Linux, shared tenancy, no pre-installed software, no license."""
    fields = {"instanceType": item.type, "regionCode": item.region, "operatingSystem": "Linux", "tenancy": "Shared",
              "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required"}
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in fields.items()]


def aws_on_demand(answer: dict) -> float:
    """The hourly USD price in a GetProducts answer (its PriceList holds JSON strings)."""
    prices = set()
    for text in answer.get("PriceList") or []:
        product = json.loads(text) if isinstance(text, str) else text
        for offer in (product.get("terms") or {}).get("OnDemand", {}).values():
            for dimension in (offer.get("priceDimensions") or {}).values():
                if dimension.get("unit") == "Hrs" and "USD" in (dimension.get("pricePerUnit") or {}):
                    prices.add(float(dimension["pricePerUnit"]["USD"]))
    prices.discard(0.0)  # reservation placeholders
    if len(prices) != 1:
        raise PriceError(f"{len(prices)} on-demand prices in the answer")
    return prices.pop()


def aws_spot(answer: dict) -> float:
    """The highest current Spot price across the region's zones (a node may land in any of the spec's zones)."""
    prices = [float(row["SpotPrice"]) for row in answer.get("SpotPriceHistory") or [] if row.get("SpotPrice")]
    if not prices:
        raise PriceError("no Spot price history for this type")
    return max(prices)


def aws_price(item: Item, clients: Callable[[str, str], object]) -> Price:
    if item.market == "spot":
        answer = clients("ec2", item.region).describe_spot_price_history(
            InstanceTypes=[item.type], ProductDescriptions=["Linux/UNIX"], StartTime=datetime.now(UTC))
        return Price(aws_spot(answer), f"EC2 Spot price history, {item.region}")
    answer = clients("pricing", AWS_PRICING_REGION).get_products(ServiceCode="AmazonEC2", Filters=aws_filters(item),
                                                                 MaxResults=10)
    return Price(aws_on_demand(answer), "AWS Price List API")


def boto3_clients(service: str, region: str):
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2})
    return boto3.client(service, region_name=region, config=config)


# --- Google Cloud ----------------------------------------------------------------------------------------------
def gcp_unit_price(sku: dict) -> float:
    """USD per usage unit (h, or GiBy.h for memory) of a SKU's current first tier above zero."""
    info = (sku.get("pricingInfo") or [{}])[0]
    rates = (info.get("pricingExpression") or {}).get("tieredRates") or []
    for rate in reversed(rates):
        money = rate.get("unitPrice") or {}
        value = int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9
        if value:
            return value
    raise PriceError(f"SKU {sku.get('skuId')} has no price")


_NOT_LIST_PRICES = ("Commitment", "Custom", "Sole Tenancy", "Reserved", "DWS", "Extended", "Premium")


def _gcp_sku(skus: list[dict], region: str, usage: str, phrase: str) -> dict:
    """The one SKU for a region and usage type (OnDemand, Preemptible: Spot) whose description has the phrase."""
    found = [sku for sku in skus
             if region in (sku.get("serviceRegions") or [])
             and (sku.get("category") or {}).get("usageType") == usage
             and phrase in sku.get("description", "")
             and not any(word in sku.get("description", "") for word in _NOT_LIST_PRICES)]
    if len(found) != 1:
        raise PriceError(f"{len(found)} {usage} SKUs named {phrase!r} in {region}")
    return found[0]


def gcp_machine_price(item: Item, machine: dict, skus: list[dict], table: dict) -> float:
    """vCPUs x the family's core SKU + GiB x its RAM SKU + every GPU (bundled, or attached to N1) x its SKU."""
    phrases = (table.get("gcp") or {}).get("sku_phrases") or {}
    family = phrases.get("families", {}).get(item.type.split("-")[0].upper())
    if not family:
        raise PriceError(f"no SKU names known for the {item.type.split('-')[0]} family (data/prices.yml)")
    usage = "Preemptible" if item.market == "spot" else "OnDemand"
    core = _gcp_sku(skus, item.region, usage, family["core"])
    ram = _gcp_sku(skus, item.region, usage, family["ram"])
    total = machine["guestCpus"] * gcp_unit_price(core) + machine["memoryMb"] / 1024 * gcp_unit_price(ram)
    gpus = [(a.get("guestAcceleratorType"), a.get("guestAcceleratorCount", 0))
            for a in machine.get("accelerators") or []]
    if item.accelerator and item.accelerator_count:
        gpus.append((item.accelerator, item.accelerator_count))
    for kind, count in gpus:
        phrase = phrases.get("gpus", {}).get(kind)
        if not phrase:
            raise PriceError(f"no SKU name known for GPU {kind} (data/prices.yml gcp.sku_phrases.gpus)")
        total += count * gcp_unit_price(_gcp_sku(skus, item.region, usage, phrase))
    return total


class GcpApi:
    """Compute Engine's SKUs (all pages, once) and machine types, through google-auth's AuthorizedSession."""

    def __init__(self, session=None):
        self._session = session
        self._skus: list[dict] | None = None

    @property
    def session(self):
        if self._session is None:
            import google.auth
            from google.auth.transport.requests import AuthorizedSession

            credentials, _ = google.auth.default(scopes=[GCP_SCOPE])
            self._session = AuthorizedSession(credentials)
        return self._session

    def _get(self, url: str, params: dict | None = None) -> dict:
        response = self.session.get(url, params=params, timeout=20)
        response.raise_for_status()
        return response.json()

    def skus(self) -> list[dict]:
        if self._skus is None:
            found, token = [], None
            while True:
                page = self._get(f"https://cloudbilling.googleapis.com/v1/{GCP_COMPUTE_SERVICE}/skus",
                                 {"pageSize": 5000, "currencyCode": "USD", **({"pageToken": token} if token else {})})
                found += page.get("skus") or []
                token = page.get("nextPageToken")
                if not token:
                    break
            self._skus = found
        return self._skus

    def machine(self, item: Item) -> dict:
        if not item.project or not item.zone:
            raise PriceError("the spec names no project and zone to read the machine type from")
        return self._get(f"https://compute.googleapis.com/compute/v1/projects/{item.project}/zones/{item.zone}/"
                         f"machineTypes/{item.type}")


def gcp_price(item: Item, api: GcpApi, table: dict) -> Price:
    if any(item.type.startswith(prefix) for prefix in (table.get("gcp") or {}).get("table_only") or []):
        raise PriceError(f"{item.type}'s price includes more than its SKUs for cores, memory and GPUs")
    hourly = gcp_machine_price(item, api.machine(item), api.skus(), table)
    return Price(round(hourly, 6), "Cloud Billing Catalog API")


# --- the book: API, cache, table -------------------------------------------------------------------------------
class PriceBook:
    """Prices by item: the cache while fresh, else the provider's API, else the dated table, else unknown.
    Set TFPROV_PRICES_OFFLINE=1 to skip the APIs (the table only)."""

    def __init__(self, cache: Path | None, table: dict, aws_clients=boto3_clients,
                 gcp_api: GcpApi | None = None, offline: bool | None = None, now: Callable[[], float] = time.time):
        self.cache_path, self.table = cache, table
        self.aws_clients, self.gcp_api, self.now = aws_clients, gcp_api or GcpApi(), now
        self.offline = os.environ.get("TFPROV_PRICES_OFFLINE") == "1" if offline is None else offline
        self._cache = self._read_cache()
        self.api_errors: dict[str, str] = {}  # provider: why its API could not be used
        self.item_errors: dict[str, str] = {}  # item key: why the API's answer held no price for it

    def _read_cache(self) -> dict:
        try:
            return json.loads(self.cache_path.read_text(encoding="utf-8")) if self.cache_path else {}
        except (OSError, ValueError):
            return {}

    def _write_cache(self) -> None:
        if self.cache_path:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache_path.write_text(json.dumps(self._cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    def price(self, item: Item) -> Price:
        cached = self._cache.get(item.key())
        if cached and self.now() - cached["at"] < CACHE_TTL_S.get(item.market, 3600):
            return Price(cached["hourly"], cached["source"] + " (cached)")
        # TPUs: the catalog prices chips, not the types a spec names; the table has them.
        if not self.offline and item.provider not in self.api_errors and not item.type.startswith("tpu-"):
            try:
                found = aws_price(item, self.aws_clients) if item.provider == "aws" else \
                    gcp_price(item, self.gcp_api, self.table)
            except PriceError as exc:  # the API answered, not for this item: the table may still know it
                self.item_errors[item.key()] = str(exc)
            except Exception as exc:  # no credentials, no network, throttled: not asked again in this run
                self.api_errors[item.provider] = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            else:
                self._cache[item.key()] = {**asdict(found), "at": self.now()}
                self._write_cache()
                return found
        return table_price(item, self.table) or Price(None, self._unknown(item))

    def _unknown(self, item: Item) -> str:
        why = "no Spot price in the table (Spot prices move hourly)" if item.market == "spot" else \
            "not in data/prices.yml"
        api = self.api_errors.get(item.provider) or self.item_errors.get(item.key())
        api = f"; API: {api}" if api else "; APIs off (TFPROV_PRICES_OFFLINE)" if self.offline else ""
        return f"unknown: {why}{api}"
