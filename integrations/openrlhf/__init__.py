"""The OpenRLHF integration: training on rlhub's environments with OpenRLHF 0.11.2.

``job`` builds the ``ray job submit`` command (``rlhub train --backend openrlhf``); ``export``
writes prompt datasets with signed labels (``rlhub export``); ``agent`` is the
``--train.agent_func_path`` module (multi-turn episodes against ``rlhub serve``), built from
``client`` (retries under one deadline), ``chat`` (chat template, turns from token ids),
``group`` (rollout-call groups, the outage breaker) and ``episode`` (leases, steps, replays).
"""
