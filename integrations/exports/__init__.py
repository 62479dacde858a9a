"""Exports: rlhub's domains served to other ecosystems' clients and trainers (a bridge, in rlhub,
brings another library's environments in; an export takes rlhub's out).

``openenv_server``: OpenEnv's WebSocket protocol, mounted by ``rlhub serve --openenv``.
``verifiers_env``: a verifiers (0.4) taskset over any rlhub mixture, for ``vf-eval`` and prime-rl.
"""
