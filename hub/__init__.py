"""rlhub.hub: the outside world, one subpackage per subsystem.

* :mod:`rlhub.hub.publish`: environment bundles, locks and their transports (``rlhub push``,
  ``pull``, ``lock``, ``new plugin``): what "the hub" means to a user.
* :mod:`rlhub.hub.server`: ``rlhub serve``, the HTTP reward and environment server.
* :mod:`rlhub.hub.trainer`: the single-machine GRPO trainer (``rlhub train --backend local``).
* :mod:`rlhub.hub.openrlhf`: the OpenRLHF bridge (job builder, agent module, prompt export).
* :mod:`rlhub.hub.bridges`: rlhub's domains served to other ecosystems (OpenEnv, verifiers).

Core never imports this package; it depends on core. The command line (:mod:`rlhub.cli`) sits
above both.
"""
