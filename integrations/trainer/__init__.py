"""Local training: the single-machine GRPO trainer behind ``rlhub train --backend local``.

``local`` is the entry (phases by steps); ``config`` reads the ``train`` section; ``session``
runs the phases; ``sft`` the warm-up on gold completions; ``grpo`` TRL's GRPOTrainer fed by the
rollout loop; ``heldout`` the held-out evaluation; ``controls`` the schedules; ``text`` token
masks and saved models.
"""
