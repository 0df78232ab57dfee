"""Shared infrastructure under every app: the Kubernetes client and list-watch loop, environment reading,
shared counters and heartbeats, request-body parsing and the one 400 shape, field errors, CRD schema
checks, safe YAML and Kubernetes quantities. It imports no app and nothing of the site (``netaware_site``)."""
