"""Standalone programs (standard library only) that run inside the rlhub sandbox.

Each module is sent as the job's source code and reads one JSON request on stdin; it prints one
line ``{"rlhub_job": ...}`` as its last line of output. The same modules are imported in-process
when generating tasks, so gold answers come from exactly the code the sandbox runs.
"""
