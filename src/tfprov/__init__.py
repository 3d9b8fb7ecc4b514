"""tfprov: plan, run and report TensorFlow GPU provisioning on Ansible."""

__version__ = "1.0.0"
