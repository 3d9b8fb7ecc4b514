"""A tiny HTTP proxy in front of moto_server for the cloud tests: it answers what moto cannot play.

- RunInstances in a zone listed in `full_zones` gets EC2's InsufficientInstanceCapacity error (HTTP 500, EC2's XML),
  as AWS answers when a zone has no capacity for a type: the zone comes from Placement.AvailabilityZone or from the
  subnet of the request (looked up in moto).
- Service Quotas GetServiceQuota for a code in `quotas` gets that value: moto's Service Quotas knows only VPC quotas
  (it answers NoSuchResource for EC2, which tfprov reports as "not readable").
Everything else is forwarded to moto unchanged. Runs in a thread of the test process; only 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CAPACITY_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code><Message>We currently do not have sufficient \
{type} capacity in the Availability Zone you requested ({zone}). Our system will be working on provisioning \
additional capacity. You can currently get {type} capacity by not specifying an Availability Zone in your request \
or choosing another Availability Zone.</Message></Error></Errors><RequestID>tfprov-test-proxy</RequestID></Response>"""


class AwsCapacityProxy:
    def __init__(self, upstream_port: int, port: int):
        self.upstream_port = upstream_port
        self.port = port
        self.full_zones: set[str] = set()
        self.quotas: dict[str, float] = {}
        self.refused: list[tuple[str, str]] = []  # (instance type, zone) answered with the capacity error
        self._subnet_zones: dict[str, str] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AwsCapacityProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def forward(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, list, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def subnet_zone(self, subnet: str, region: str) -> str:
        if subnet not in self._subnet_zones:
            import boto3

            ec2 = boto3.client("ec2", region_name=region, endpoint_url=f"http://127.0.0.1:{self.upstream_port}",
                               aws_access_key_id="testing", aws_secret_access_key="testing")
            self._subnet_zones[subnet] = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["AvailabilityZone"]
        return self._subnet_zones[subnet]

    def capacity_answer(self, form: dict, headers: dict) -> bytes | None:
        if form.get("Action", [""])[0] != "RunInstances" or not self.full_zones:
            return None
        zone = form.get("Placement.AvailabilityZone", [""])[0]
        subnet = (form.get("SubnetId") or form.get("NetworkInterface.1.SubnetId") or [""])[0]
        if not zone and subnet:
            credential = headers.get("Authorization", "").split("Credential=")[-1].split("/")
            zone = self.subnet_zone(subnet, credential[2] if len(credential) > 2 else "us-east-1")
        if zone not in self.full_zones:
            return None
        kind = form.get("InstanceType", ["?"])[0]
        self.refused.append((kind, zone))
        return CAPACITY_ERROR.format(type=kind, zone=zone).encode()

    def quota_answer(self, target: str, body: bytes) -> bytes | None:
        if not target.endswith(".GetServiceQuota"):
            return None
        asked = json.loads(body or b"{}")
        code = asked.get("QuotaCode", "")
        if code not in self.quotas:
            return None
        return json.dumps({"Quota": {"ServiceCode": asked.get("ServiceCode"), "QuotaCode": code,
                                     "QuotaName": code, "Value": float(self.quotas[code]), "Unit": "None"}}).encode()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, headers: list, body: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                quota = proxy.quota_answer(self.headers.get("X-Amz-Target", ""), body)
                if quota is not None:
                    return self._reply(200, [("Content-Type", "application/x-amz-json-1.1")], quota)
                if "x-www-form-urlencoded" in self.headers.get("Content-Type", ""):
                    capacity = proxy.capacity_answer(urllib.parse.parse_qs(body.decode()), headers)
                    if capacity is not None:
                        return self._reply(500, [("Content-Type", "text/xml")], capacity)
                status, out_headers, out = proxy.forward(self.command, self.path, headers, body)
                return self._reply(status, out_headers, out)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        return Handler
