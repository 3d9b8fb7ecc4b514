"""Started by Python in every process that has tests/support/gcp_recorded on PYTHONPATH.

Only when TFPROV_GCP_RECORDING names a recording: then every HTTP request made through `requests` (google-auth,
the google.cloud plugins and modules, tfprov's own GCP modules) is answered from that recording, or refused.
"""

import os

if os.environ.get("TFPROV_GCP_RECORDING"):
    import gcp_recorded_harness

    gcp_recorded_harness.activate(os.environ["TFPROV_GCP_RECORDING"])
