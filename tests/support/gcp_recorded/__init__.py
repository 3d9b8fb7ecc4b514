"""Recorded-response harness for GCP: see harness.py."""
