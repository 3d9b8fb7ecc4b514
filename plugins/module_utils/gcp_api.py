# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tfprov's one client for the GCP REST APIs it calls itself (preflight, nodes, networks, TPU VMs, stopping a VM to
bake it, bucket location, model downloads from gs://): credentials, errors, pagination and operations in one place.

Credentials come only from the standard places: GCP_SERVICE_ACCOUNT_FILE (the google.cloud collection's variable)
or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the VM's service account).
Nothing here logs or returns a credential.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

try:
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth.transport.requests import AuthorizedSession
    from google.oauth2 import service_account

    HAS_GOOGLE_AUTH = True
except ImportError:  # reported by GcpApiError when a call is made
    HAS_GOOGLE_AUTH = False

COMPUTE = "https://compute.googleapis.com/compute/v1"
TPU = "https://tpu.googleapis.com/v2"
STORAGE = "https://storage.googleapis.com/storage/v1"
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
SA_FILE_ENV = "GCP_SERVICE_ACCOUNT_FILE"
ADC_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
NO_CREDENTIALS = ("no GCP credentials found: set %s (or %s) to a service-account key file, or run "
                  "`gcloud auth application-default login`" % (ADC_ENV, SA_FILE_ENV))


class GcpApiError(Exception):
    """One line for the user; status and reason (e.g. ZONE_RESOURCE_POOL_EXHAUSTED) when GCP answered."""

    def __init__(self, message, status=None, reason=""):
        super(GcpApiError, self).__init__(message)
        self.status = status
        self.reason = reason


def auth_kind():
    """The google.cloud modules' auth_kind for the same credentials tfprov's own calls use."""
    return "serviceaccount" if os.environ.get(SA_FILE_ENV) else "application"


def credentials(scopes=None):
    if not HAS_GOOGLE_AUTH:
        raise GcpApiError("the google-auth library is missing on the controller: pip install google-auth")
    scopes = scopes or SCOPES
    path = os.environ.get(SA_FILE_ENV)
    if path:
        try:
            return service_account.Credentials.from_service_account_file(os.path.expanduser(path), scopes=scopes)
        except (OSError, ValueError) as exc:
            raise GcpApiError("%s=%s is not a readable service-account key file (%s): fix the path or unset it"
                              % (SA_FILE_ENV, path, type(exc).__name__)) from None
    try:
        found, _project = google.auth.default(scopes=scopes)
    except auth_exceptions.DefaultCredentialsError:
        raise GcpApiError(NO_CREDENTIALS) from None
    return found


def _reason(payload):
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return "", ""
    details = error.get("errors") or error.get("details") or [{}]
    first = details[0] if isinstance(details, list) and details and isinstance(details[0], dict) else {}
    return first.get("reason") or error.get("status") or "", error.get("message") or ""


class GcpApi(object):
    """get/post/delete on absolute URLs; GCP errors become GcpApiError with the API's own reason."""

    def __init__(self, session=None, sleep=time.sleep):
        if session is None:
            session = AuthorizedSession(credentials())
        self.session = session
        self.sleep = sleep

    def _call(self, method, url, allow_404=False, raw=False, **kwargs):
        try:
            response = self.session.request(method, url, timeout=60, **kwargs)
        except auth_exceptions.RefreshError:
            raise GcpApiError("GCP refused the credentials (token refresh failed): check %s / %s"
                              % (ADC_ENV, SA_FILE_ENV)) from None
        except Exception as exc:  # requests' connection errors: one line, no traceback
            raise GcpApiError("cannot reach %s: %s" % (url.split("?")[0], exc)) from None
        if allow_404 and response.status_code == 404:
            return None
        if raw and response.status_code < 400:
            return response
        try:
            payload = response.json() if response.content else {}
        except ValueError:
            payload = {}
        if response.status_code >= 400:
            reason, message = _reason(payload)
            raise GcpApiError("GCP answered %d to %s %s: %s %s" % (response.status_code, method, url.split("?")[0],
                                                                   reason, message), response.status_code, reason)
        return payload

    def get(self, url, params=None, allow_404=False):
        return self._call("GET", url, allow_404=allow_404, params=params)

    def stream(self, url, params=None):
        """A GET whose body is read by the caller (iter_content): object downloads."""
        return self._call("GET", url, raw=True, params=params, stream=True)

    def get_all(self, url, params=None, key="items"):
        """Every item of a paged list (Compute API: items, nextPageToken)."""
        params, found = dict(params or {}), []
        while True:
            page = self.get(url, params=params)
            found += page.get(key) or []
            if not page.get("nextPageToken"):
                return found
            params["pageToken"] = page["nextPageToken"]

    def post(self, url, body, params=None):
        return self._call("POST", url, json=body, params=params)

    def patch(self, url, body):
        return self._call("PATCH", url, json=body)

    def delete(self, url, allow_404=False):
        return self._call("DELETE", url, allow_404=allow_404)

    def wait_operation(self, operation, timeout=1800, interval=5):
        """Poll a long-running operation (TPU API v2: {name, done, error}) until done; GcpApiError on error."""
        deadline = time.time() + timeout
        while not operation.get("done"):
            if time.time() > deadline:
                raise GcpApiError("operation %s still running after %d s" % (operation.get("name"), timeout))
            self.sleep(interval)
            operation = self.get("%s/%s" % (TPU, operation["name"]))
        error = operation.get("error")
        if error:
            raise GcpApiError("operation %s failed: %s" % (operation.get("name"), error.get("message", error)),
                              reason=str(error.get("code", "")))
        return operation

    def wait_compute_operation(self, operation, timeout=600, interval=2):
        """Poll a Compute API operation ({name, status, selfLink, error.errors}) until DONE; GcpApiError on error."""
        deadline = time.time() + timeout
        while operation.get("status") != "DONE":
            if time.time() > deadline:
                raise GcpApiError("operation %s still running after %d s" % (operation.get("name"), timeout))
            self.sleep(interval)
            operation = self.get(operation["selfLink"].replace("https://www.googleapis.com/compute/v1", COMPUTE))
        errors = (operation.get("error") or {}).get("errors") or []
        if errors:
            raise GcpApiError("operation %s failed: %s" % (operation.get("name"), errors[0].get("message", errors[0])),
                              reason=str(errors[0].get("code", "")))
        return operation


def region_of(zone):
    return zone.rsplit("-", 1)[0]
