"""Model sources: parsing, listing and syncing local, s3:// (moto in-process) and gs:// (a local JSON API stub)."""

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.model_sources import (
    ModelSourceError,
    Source,
    list_files,
    parse_source,
    sync,
    version_dirs,
)

MODEL = {
    "1/saved_model.pb": b"graph one",
    "1/variables/variables.index": b"index",
    "1/variables/variables.data-00000-of-00001": b"weights" * 100,
    "2/saved_model.pb": b"graph two",
}


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- parsing ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/srv/models/digits", Source("file", path="/srv/models/digits")),
        ("file:///srv/models/digits", Source("file", path="/srv/models/digits")),
        ("gs://bucket/models/digits/", Source("gs", bucket="bucket", prefix="models/digits/")),
        ("s3://bucket/models/digits", Source("s3", bucket="bucket", prefix="models/digits/")),
        ("S3://bucket", Source("s3", bucket="bucket", prefix="")),
    ],
)
def test_parse_source(text, expected):
    assert parse_source(text) == expected


def test_source_url_round_trips():
    assert str(parse_source("gs://bucket/models/digits/")) == "gs://bucket/models/digits"
    assert parse_source("s3://bucket").url == "s3://bucket"


@pytest.mark.parametrize("text", ["hdfs://namenode/models", "http://example.com/m", ""])
def test_parse_source_refuses_unknown_schemes_in_one_line(text):
    with pytest.raises(ValueError) as info:
        parse_source(text)
    message = str(info.value)
    assert "\n" not in message
    assert "s3://" in message and "gs://" in message
    if text:
        assert text in message


def test_parse_source_needs_a_bucket():
    with pytest.raises(ValueError, match="no bucket name"):
        parse_source("gs:///models")


# -- local directories -----------------------------------------------------------------------------------------------


def write_tree(root, files):
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def test_list_local_directory_and_version_dirs(tmp_path):
    write_tree(tmp_path, {**MODEL, "README": b"not a version"})
    files = list_files(str(tmp_path))
    assert files["1/saved_model.pb"] == {"size": 9, "md5": None}
    assert set(files) == set(MODEL) | {"README"}
    assert version_dirs(files) == {
        "1": ["saved_model.pb", "variables/variables.data-00000-of-00001", "variables/variables.index"],
        "2": ["saved_model.pb"],
    }
    assert list_files("file://" + str(tmp_path)) == files


def test_missing_local_directory_is_named(tmp_path):
    with pytest.raises(ModelSourceError, match="model source .*/nope: no such directory"):
        list_files(str(tmp_path / "nope"))


def test_local_sources_are_not_synced(tmp_path):
    with pytest.raises(ValueError, match="used in place"):
        sync(str(tmp_path), str(tmp_path / "cache"))


# -- s3 (moto) -------------------------------------------------------------------------------------------------------


@pytest.fixture
def s3(monkeypatch):
    moto = pytest.importorskip("moto")
    import boto3

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with moto.mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="models")
        for rel, data in MODEL.items():
            client.put_object(Bucket="models", Key="serving/digits/" + rel, Body=data)
        client.put_object(Bucket="models", Key="serving/digits2/1/saved_model.pb", Body=b"other model")
        yield client


def test_s3_listing_has_md5s_and_stays_under_the_prefix(s3):
    files = list_files("s3://models/serving/digits")
    assert set(files) == set(MODEL)
    assert files["2/saved_model.pb"] == {"size": 9, "md5": hashlib.md5(b"graph two").hexdigest()}


def test_s3_sync_is_idempotent_and_removes_deleted_objects(s3, tmp_path):
    cache = tmp_path / "digits"
    first = sync("s3://models/serving/digits", str(cache))
    assert first == {"changed": True, "downloaded": sorted(MODEL), "removed": [], "unverified": []}
    assert tree(cache) == MODEL

    assert sync("s3://models/serving/digits", str(cache))["changed"] is False

    s3.delete_object(Bucket="models", Key="serving/digits/2/saved_model.pb")
    s3.put_object(Bucket="models", Key="serving/digits/1/saved_model.pb", Body=b"graph ONE")
    third = sync("s3://models/serving/digits", str(cache))
    assert third["changed"] is True
    assert third["downloaded"] == ["1/saved_model.pb"]
    assert third["removed"] == ["2/saved_model.pb"]
    assert not (cache / "2").exists()
    assert (cache / "1/saved_model.pb").read_bytes() == b"graph ONE"


def test_s3_check_mode_writes_nothing(s3, tmp_path):
    result = sync("s3://models/serving/digits", str(tmp_path / "digits"), check_mode=True)
    assert result["changed"] is True and result["downloaded"] == sorted(MODEL)
    assert list(tmp_path.iterdir()) == []


def test_s3_local_edits_are_repaired(s3, tmp_path):
    cache = tmp_path / "digits"
    sync("s3://models/serving/digits", str(cache))
    (cache / "1/saved_model.pb").write_bytes(b"graph 0ne")  # same size, other content
    (cache / "stray.txt").write_bytes(b"x")
    result = sync("s3://models/serving/digits", str(cache))
    assert result["downloaded"] == ["1/saved_model.pb"] and result["removed"] == ["stray.txt"]
    assert tree(cache) == MODEL


def test_s3_multipart_objects_are_checked_by_size_and_said_so(s3, tmp_path):
    part = b"p" * (5 * 1024 * 1024)
    upload = s3.create_multipart_upload(Bucket="models", Key="big/1/saved_model.pb")
    etags = [s3.upload_part(Bucket="models", Key="big/1/saved_model.pb", UploadId=upload["UploadId"],
                            PartNumber=n, Body=body)["ETag"] for n, body in ((1, part), (2, b"tail"))]
    s3.complete_multipart_upload(Bucket="models", Key="big/1/saved_model.pb", UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": [{"ETag": e, "PartNumber": n + 1}
                                                            for n, e in enumerate(etags)]})
    assert list_files("s3://models/big")["1/saved_model.pb"]["md5"] is None
    first = sync("s3://models/big", str(tmp_path / "big"))
    assert first["unverified"] == ["1/saved_model.pb"] and first["changed"] is True
    assert (tmp_path / "big.tfprov-sync.json").exists()
    second = sync("s3://models/big", str(tmp_path / "big"))
    assert second == {"changed": False, "downloaded": [], "removed": [], "unverified": ["1/saved_model.pb"]}


def test_s3_missing_bucket_and_prefix_are_named(s3, tmp_path):
    with pytest.raises(ModelSourceError, match=r"s3://nobucket/x: bucket 'nobucket' not found"):
        list_files("s3://nobucket/x")
    with pytest.raises(ModelSourceError, match=r"s3://models/absent: no objects"):
        sync("s3://models/absent", str(tmp_path / "absent"))
    assert not (tmp_path / "absent").exists()


# -- gs (local JSON API stub) ----------------------------------------------------------------------------------------


class GCSStub(BaseHTTPRequestHandler):
    buckets = {}  # bucket -> {name: bytes}
    no_md5 = set()  # composite objects: no md5Hash
    corrupt = set()  # served with other bytes of the same length
    page_size = 2
    requests = []

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = json.dumps(body).encode() if content_type == "application/json" else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.requests.append((url.path, query))
        parts = url.path.split("/")  # ["", "storage", "v1", "b", bucket, "o", object?]
        if parts[1:4] != ["storage", "v1", "b"] or len(parts) < 6 or parts[5] != "o":
            return self.reply(400, {"error": {"message": "bad path"}})
        objects = self.buckets.get(unquote(parts[4]))
        if objects is None:
            return self.reply(404, {"error": {"code": 404, "message": "The specified bucket does not exist."}})
        if len(parts) == 7:
            name = unquote(parts[6])
            if name not in objects or query.get("alt") != "media":
                return self.reply(404, {"error": {"message": "No such object"}})
            data = objects[name]
            return self.reply(200, bytes(len(data)) if name in self.corrupt else data, "application/octet-stream")
        names = sorted(n for n in objects if n.startswith(query.get("prefix", "")))
        start = int(query.get("pageToken", "0"))
        page = {"kind": "storage#objects", "items": []}
        for name in names[start:start + self.page_size]:
            item = {"name": name, "size": str(len(objects[name])), "generation": "1", "crc32c": "AAAAAA=="}
            if name not in self.no_md5:
                item["md5Hash"] = base64.b64encode(hashlib.md5(objects[name]).digest()).decode()
            page["items"].append(item)
        if start + self.page_size < len(names):
            page["nextPageToken"] = str(start + self.page_size)
        return self.reply(200, page)


@pytest.fixture
def gcs():
    GCSStub.buckets = {"models": {"digits/" + rel: data for rel, data in MODEL.items()}}
    GCSStub.no_md5, GCSStub.corrupt, GCSStub.requests = set(), set(), []
    server = ThreadingHTTPServer(("127.0.0.1", 0), GCSStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield GCSStub, {"gcs_endpoint": f"http://127.0.0.1:{server.server_port}", "gcs_anonymous": True}
    server.shutdown()
    server.server_close()


def test_gcs_listing_follows_pages(gcs):
    stub, opts = gcs
    files = list_files("gs://models/digits", **opts)
    assert set(files) == set(MODEL)
    assert files["1/variables/variables.index"] == {"size": 5, "md5": hashlib.md5(b"index").hexdigest()}
    tokens = [query.get("pageToken") for _path, query in stub.requests]
    assert tokens == [None, "2"]


def test_gcs_sync_is_idempotent_and_removes_deleted_objects(gcs, tmp_path):
    stub, opts = gcs
    cache = tmp_path / "digits"
    assert sync("gs://models/digits", str(cache), **opts)["downloaded"] == sorted(MODEL)
    assert tree(cache) == MODEL
    assert sync("gs://models/digits", str(cache), **opts) == {
        "changed": False, "downloaded": [], "removed": [], "unverified": []}
    del stub.buckets["models"]["digits/2/saved_model.pb"]
    result = sync("gs://models/digits", str(cache), **opts)
    assert result["changed"] is True and result["removed"] == ["2/saved_model.pb"] and not (cache / "2").exists()


def test_gcs_bad_md5_leaves_nothing_behind(gcs, tmp_path):
    stub, opts = gcs
    stub.corrupt.add("digits/2/saved_model.pb")
    cache = tmp_path / "digits"
    with pytest.raises(ModelSourceError, match=r"gs://models/digits: 2/saved_model.pb arrived with md5 .*nothing kept"):
        sync("gs://models/digits", str(cache), **opts)
    assert not (cache / "2/saved_model.pb").exists()
    assert [p.name for p in (cache / "2").iterdir()] == []  # no temporary file either


def test_gcs_bad_md5_keeps_the_previous_good_copy(gcs, tmp_path):
    stub, opts = gcs
    cache = tmp_path / "digits"
    sync("gs://models/digits", str(cache), **opts)
    stub.buckets["models"]["digits/2/saved_model.pb"] = b"graph 2.0"
    stub.corrupt.add("digits/2/saved_model.pb")
    with pytest.raises(ModelSourceError, match="nothing kept"):
        sync("gs://models/digits", str(cache), **opts)
    assert tree(cache) == MODEL


def test_gcs_composite_objects_are_unverified(gcs, tmp_path):
    stub, opts = gcs
    stub.no_md5.add("digits/1/saved_model.pb")
    first = sync("gs://models/digits", str(tmp_path / "digits"), **opts)
    assert first["unverified"] == ["1/saved_model.pb"]
    assert sync("gs://models/digits", str(tmp_path / "digits"), **opts)["changed"] is False


def test_gcs_missing_bucket_and_prefix_are_named(gcs):
    _stub, opts = gcs
    with pytest.raises(ModelSourceError, match=r"gs://nobucket/digits: bucket 'nobucket' not found"):
        list_files("gs://nobucket/digits", **opts)
    with pytest.raises(ModelSourceError, match=r"gs://models/nothing: no objects"):
        list_files("gs://models/nothing", **opts)


def test_gcs_without_credentials_says_what_to_do(monkeypatch):
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    def no_credentials(**_kwargs):
        raise DefaultCredentialsError("none")

    monkeypatch.setattr(google.auth, "default", no_credentials)
    with pytest.raises(ModelSourceError,
                       match="gs://models/digits: no GCP credentials found: set GOOGLE_APPLICATION_CREDENTIALS"):
        list_files("gs://models/digits", gcs_endpoint="http://127.0.0.1:9")
