"""Serving: ``rlhub serve``, the HTTP reward and environment server.

``app`` is the FastAPI application (OpenRLHF's ``/get_reward``, the ``/v1`` API, ``/metrics``);
``bodies`` holds every route's request and response models; ``protocol`` reads OpenRLHF's
samples; ``guard`` bounds bodies and items; ``dedupe`` answers retried requests; ``pool`` runs
verification on threads or Ray actors; ``state`` holds episodes and the scheduler; ``metrics``
counts; ``process`` starts a server in a child process (tests, benches).
"""
