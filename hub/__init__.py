"""rlhub.hub: the outside world — publishing and locks, the HTTP server, trainer bridges.

Core never imports this package at module import time; it depends on core.
"""
