"""A throw-away service-account key for the recorded GCP runs: a fresh RSA key, written at test time, never used
against Google (the token endpoint answer comes from the harness)."""

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def write_fake_key(path, project="tfprov-test"):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info = {
        "type": "service_account", "project_id": project, "private_key_id": "0" * 40, "private_key": pem,
        "client_email": f"tfprov-recorded@{project}.iam.gserviceaccount.com", "client_id": "1" * 21,
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
    }
    with open(path, "w") as handle:
        json.dump(info, handle)
    return path
