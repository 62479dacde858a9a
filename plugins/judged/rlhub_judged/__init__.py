"""rlhub-judged: domains whose reward comes from an LLM judge, alone or gated by rule checks.

The judge is any OpenAI-compatible endpoint named by ``RLHUB_JUDGE_URL`` and ``RLHUB_JUDGE_MODEL``
(see :mod:`rlhub.verifiers.judge`); the domains are in :mod:`rlhub_judged.domains`.
"""
