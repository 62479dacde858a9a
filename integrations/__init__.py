"""rlhub.integrations: the outside world, one subpackage per subsystem.

* :mod:`rlhub.integrations.hub`: environment bundles, locks and their transports (``rlhub push``,
  ``pull``, ``lock``, ``new plugin``): what "the hub" means to a user.
* :mod:`rlhub.integrations.server`: ``rlhub serve``, the HTTP reward and environment server.
* :mod:`rlhub.integrations.trainer`: the single-machine GRPO trainer (``rlhub train --backend local``).
* :mod:`rlhub.integrations.openrlhf`: the OpenRLHF integration (job builder, agent module, prompt export).
* :mod:`rlhub.integrations.exports`: rlhub's domains served to other ecosystems (OpenEnv, verifiers).

Core never imports this package; it depends on core. The command line (:mod:`rlhub.cli`) sits
above both.
"""
