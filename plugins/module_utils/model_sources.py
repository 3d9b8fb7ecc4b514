# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model sources for TF Serving: a local directory, gs://bucket/prefix or s3://bucket/prefix.

Controller side only (the tf_serving action plugin and the tests import it). Cloud objects are listed and
downloaded into a cache directory on the controller, which the role then copies to the nodes:

- s3:// through boto3 (its normal credential chain; endpoint and region can be given);
- gs:// through google-auth against the GCS JSON API (application default credentials, read-only scope,
  or anonymous credentials for public buckets and local stubs).

Every download goes to a temporary file that is renamed only after its size and md5 match the listing, so a
failed or corrupt download leaves nothing behind. Objects without a usable md5 (S3 multipart or KMS-encrypted
objects, GCS composite objects) are checked by size only and reported as "unverified"; the listing tag they were
downloaded at is kept in ``<dest_dir>.tfprov-sync.json`` so that an unchanged object is not fetched again.
Nothing here logs or returns credentials.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from urllib.parse import quote

SCHEMES = ("file", "gs", "s3")
GCS_ENDPOINT = "https://storage.googleapis.com"
GCS_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
CHUNK = 1024 * 1024
TIMEOUT = 60
_MD5_HEX = re.compile(r"^[0-9a-f]{32}$")


class ModelSourceError(Exception):
    """A source that cannot be listed or fetched; the message names the source and says why, on one line."""


@dataclass(frozen=True)
class Source:
    scheme: str  # "file", "gs" or "s3"
    bucket: str = ""  # gs/s3 only
    prefix: str = ""  # gs/s3 only: "" (whole bucket) or ending with "/"
    path: str = ""  # file only

    @property
    def url(self):
        if self.scheme == "file":
            return self.path
        return "{}://{}/{}".format(self.scheme, self.bucket, self.prefix).rstrip("/")

    def __str__(self):
        return self.url


def parse_source(source):
    """Parse a model source: a bare path, file://path, gs://bucket[/prefix] or s3://bucket[/prefix]."""
    if isinstance(source, Source):
        return source
    text = str(source or "").strip()
    if not text:
        raise ValueError("empty model source: give a local path, file://, gs:// or s3:// URL")
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", text)
    if not match:
        return Source("file", path=os.path.expanduser(text))
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme not in SCHEMES:
        raise ValueError("model source {}: unsupported scheme '{}://' (supported: a local path, file://, gs://, s3://)"
                         .format(text, scheme))
    if scheme == "file":
        if not rest:
            raise ValueError("model source {}: no path after file://".format(text))
        return Source("file", path=os.path.expanduser(rest))
    bucket, dummy, prefix = rest.partition("/")
    if not bucket:
        raise ValueError("model source {}: no bucket name (expected {}://BUCKET/PREFIX)".format(text, scheme))
    prefix = prefix.strip("/")
    return Source(scheme, bucket=bucket, prefix=prefix + "/" if prefix else "")


def list_files(source, *, s3_endpoint_url=None, s3_region=None, gcs_endpoint=None, gcs_anonymous=False):
    """Relative path -> {"size": int, "md5": hex or None} of every file under the source.

    Local files are not read (md5 None); cloud md5s come from the listing (None when the object has none).
    """
    src = parse_source(source)
    if src.scheme == "file":
        return _local_files(src)
    backend = _backend(src, s3_endpoint_url, s3_region, gcs_endpoint, gcs_anonymous)
    return {rel: {"size": obj["size"], "md5": obj["md5"]} for rel, obj in _remote_files(src, backend).items()}


def version_dirs(files):
    """Top-level directory name -> sorted paths inside it, e.g. {"1": ["saved_model.pb", "variables/..."]}.

    Files directly at the top level belong to no version and are left out.
    """
    versions = {}
    for rel in sorted(files):
        top, sep, inner = rel.partition("/")
        if sep:
            versions.setdefault(top, []).append(inner)
    return versions


def sync(source, dest_dir, *, s3_endpoint_url=None, s3_region=None, gcs_endpoint=None, gcs_anonymous=False,
         check_mode=False):
    """Make dest_dir (a directory owned by this source) an exact copy of a gs:// or s3:// source.

    Returns {"changed", "downloaded", "removed", "unverified"} (relative paths, sorted). In check mode nothing
    is written: the lists say what would be downloaded and removed.
    """
    src = parse_source(source)
    if src.scheme == "file":
        raise ValueError("model source {}: a local path is used in place, there is nothing to sync".format(src))
    if not dest_dir or os.path.abspath(dest_dir) == os.path.abspath(os.sep):
        raise ValueError("model source {}: refusing to sync into '{}'".format(src, dest_dir))
    dest_dir = os.path.abspath(dest_dir)
    backend = _backend(src, s3_endpoint_url, s3_region, gcs_endpoint, gcs_anonymous)
    remote = _remote_files(src, backend)
    local = _local_files(Source("file", path=dest_dir)) if os.path.isdir(dest_dir) else {}
    manifest_path = dest_dir + ".tfprov-sync.json"
    unverified_tags = _read_json(manifest_path)  # relative path -> listing tag it was downloaded at

    removed = sorted(rel for rel in local if rel not in remote)
    wanted = sorted(rel for rel, obj in remote.items() if not _up_to_date(dest_dir, rel, obj, local, unverified_tags))
    if not check_mode:
        for rel in removed:
            os.unlink(os.path.join(dest_dir, rel))
        _prune_empty_dirs(dest_dir)
        for rel in wanted:
            verified = _download(src, backend, rel, remote[rel], os.path.join(dest_dir, rel))
            if verified:
                unverified_tags.pop(rel, None)
            else:
                unverified_tags[rel] = remote[rel]["tag"]
        _write_json(manifest_path, {rel: tag for rel, tag in unverified_tags.items() if rel in remote})
    unverified = sorted(rel for rel in remote if rel in unverified_tags or remote[rel]["md5"] is None)
    return {"changed": bool(removed or wanted), "downloaded": wanted, "removed": removed, "unverified": unverified}


# -- local files -------------------------------------------------------------------------------------------------


def _local_files(src):
    if not os.path.isdir(src.path):
        what = "is not a directory" if os.path.exists(src.path) else "no such directory"
        raise ModelSourceError("model source {}: {}".format(src.path, what))
    files = {}
    for root, dirs, names in os.walk(src.path):
        dirs.sort()
        for name in names:
            full = os.path.join(root, name)
            if os.path.isfile(full):
                files[os.path.relpath(full, src.path).replace(os.sep, "/")] = {"size": os.path.getsize(full),
                                                                               "md5": None}
    return files


def _file_md5(path):
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _up_to_date(dest_dir, rel, obj, local, unverified_tags):
    if rel not in local or local[rel]["size"] != obj["size"]:
        return False
    if rel in unverified_tags:  # downloaded without an md5 check: unchanged while the listing tag is unchanged
        return unverified_tags[rel] == obj["tag"]
    return obj["md5"] is None or _file_md5(os.path.join(dest_dir, rel)) == obj["md5"]


def _prune_empty_dirs(top):
    for root, _dirs, _names in os.walk(top, topdown=False):
        if root != top and not os.listdir(root):
            os.rmdir(root)


def _read_json(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path, data):
    if not data:
        if os.path.exists(path):
            os.unlink(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)


# -- remote listing and download -----------------------------------------------------------------------------------


def _backend(src, s3_endpoint_url, s3_region, gcs_endpoint, gcs_anonymous):
    if src.scheme == "s3":
        return _S3(src, s3_endpoint_url, s3_region)
    return _GCS(src, gcs_endpoint or GCS_ENDPOINT, gcs_anonymous)


def _remote_files(src, backend):
    """Relative path -> {"size", "md5", "tag", "key"}; refuses an empty prefix and names that escape it."""
    files = {}
    for obj in backend.objects():
        rel = obj["key"][len(src.prefix):]
        if not rel or rel.endswith("/"):  # "directory" placeholder objects
            continue
        parts = rel.split("/")
        if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise ModelSourceError("model source {}: object name '{}' is not a safe relative path".format(src, rel))
        files[rel] = obj
    if not files:
        raise ModelSourceError("model source {}: no objects under this prefix".format(src))
    return files


def _download(src, backend, rel, obj, target):
    """Fetch one object to target through a temporary file; True when its md5 was verified."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=os.path.dirname(target), prefix="." + os.path.basename(target) + ".",
                                         suffix=".part", delete=False)
    try:
        digest, size = hashlib.md5(usedforsecurity=False), 0
        with handle:
            chunks, expected_md5 = backend.download(obj)
            for chunk in chunks:
                handle.write(chunk)
                digest.update(chunk)
                size += len(chunk)
        if size != obj["size"]:
            raise ModelSourceError("model source {}: {} arrived with {} bytes, the listing says {}; nothing kept"
                                   .format(src, rel, size, obj["size"]))
        if expected_md5 is not None and digest.hexdigest() != expected_md5:
            raise ModelSourceError("model source {}: {} arrived with md5 {}, the source says {}; nothing kept"
                                   .format(src, rel, digest.hexdigest(), expected_md5))
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, target)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
    return expected_md5 is not None


class _S3:
    def __init__(self, src, endpoint_url, region):
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        self.src, self.errors = src, (BotoCoreError, ClientError)
        self.client = boto3.client("s3", endpoint_url=endpoint_url, region_name=region)

    def _fail(self, exc):
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("NoSuchBucket", "404"):
            return ModelSourceError("model source {}: bucket '{}' not found".format(self.src, self.src.bucket))
        return ModelSourceError("model source {}: {}".format(self.src, str(exc).splitlines()[0]))

    def objects(self):
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.src.bucket,
                                                                          Prefix=self.src.prefix)
            for page in pages:
                for item in page.get("Contents", []):
                    etag = item.get("ETag", "").strip('"').lower()
                    yield {"key": item["Key"], "size": int(item["Size"]), "tag": etag,
                           "md5": etag if _MD5_HEX.match(etag) else None}  # "<md5>-<parts>": multipart
        except self.errors as exc:
            raise self._fail(exc) from None

    def download(self, obj):
        try:
            response = self.client.get_object(Bucket=self.src.bucket, Key=obj["key"])
        except self.errors as exc:
            raise self._fail(exc) from None
        # With SSE-KMS or customer keys the ETag is not the content's md5.
        encrypted = response.get("SSECustomerAlgorithm") or str(response.get("ServerSideEncryption", "")).startswith(
            "aws:kms")
        return self._chunks(response["Body"]), None if encrypted else obj["md5"]

    def _chunks(self, body):
        try:
            yield from body.iter_chunks(CHUNK)
        except self.errors as exc:
            raise self._fail(exc) from None


def _describe(exc):
    first = (str(exc).splitlines() or [""])[0][:200]
    return "{}: {}".format(type(exc).__name__, first) if first else type(exc).__name__


class _GCS:
    """gs:// through tfprov's one GCP client (gcp_api): its credentials, errors and pagination."""

    def __init__(self, src, endpoint, anonymous):
        from ansible_collections.tfprov.gpu.plugins.module_utils import gcp_api
        from google.auth.transport.requests import AuthorizedSession

        self.src, self.gcp = src, gcp_api
        self.base = "{}/storage/v1/b/{}/o".format(endpoint.rstrip("/"), quote(src.bucket, safe=""))
        if anonymous:
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()
        else:
            try:
                credentials = gcp_api.credentials([GCS_SCOPE])
            except gcp_api.GcpApiError as exc:
                raise ModelSourceError("model source {}: {} (a public bucket can be read anonymously)"
                                       .format(src, exc)) from None
        self.api = gcp_api.GcpApi(AuthorizedSession(credentials))

    def _fail(self, exc):
        if exc.status == 404:
            return ModelSourceError("model source {}: bucket '{}' not found".format(self.src, self.src.bucket))
        return ModelSourceError("model source {}: {}".format(self.src, exc))

    def objects(self):
        params = {"prefix": self.src.prefix, "fields": "items(name,size,md5Hash,crc32c,generation),nextPageToken"}
        try:
            items = self.api.get_all(self.base, params=params)
        except self.gcp.GcpApiError as exc:
            raise self._fail(exc) from None
        for item in items:
            md5 = base64.b64decode(item["md5Hash"]).hex() if item.get("md5Hash") else None  # composite: none
            yield {"key": item["name"], "size": int(item["size"]), "md5": md5,
                   "tag": md5 or "{}:{}".format(item.get("generation", ""), item.get("crc32c", ""))}

    def download(self, obj):
        url = "{}/{}".format(self.base, quote(obj["key"], safe=""))
        try:
            response = self.api.stream(url, params={"alt": "media"})
        except self.gcp.GcpApiError as exc:
            raise ModelSourceError("model source {}: {}".format(self.src, exc)) from None
        return self._chunks(response), obj["md5"]

    def _chunks(self, response):
        from requests import RequestException

        try:
            yield from response.iter_content(CHUNK)
        except RequestException as exc:
            raise ModelSourceError("model source {}: {}".format(self.src, _describe(exc))) from None
        finally:
            response.close()
