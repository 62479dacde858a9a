r"""Domain scheduling: which domains the next batch comes from.

Public API (stable)::

    sched = rlhub.Scheduler.from_config("mix.yaml", registry)   # or a dict; built via a hook
    sched.weights()                     # {domain: probability} of the next batch
    tasks = sched.sample(256)           # tasks, stratified over the mixture
    zero = sched.observe(d, [[r, ...], ...])   # one inner list of rollout rewards per group;
                                        # None for a rollout whose failure is not the model's
    sched.refill(d, zero)               # replace zero-variance groups from the same domain
    sched.observe_eval(d, score, n)     # held-out mean reward over n items
    sched.state_dict() / sched.load_state_dict(state)   # bit-exact resume
    sched.counts(), sched.signals(), sched.allocate(n), sched.log(run_dir, step)

A trainer's step::

    tasks = sched.sample(B)
    for round in range(max_refill_rounds):           # DAPO-style, e.g. 3 rounds
        groups = rollout(tasks)                      # G completions per task, scored
        tasks = []
        for d, rewards in by_domain(groups):
            tasks += sched.refill(d, sched.observe(d, rewards))
        if not tasks: break
    train_on(informative_groups); sched.log(run_dir, step)

Strategies (``strategy:`` in the mixture; units are ungrouped domains and whole groups):

* ``uniform``: every unit equal. ``static``: unit mass = its weight.
* ``temperature``: mass ∝ weight · size^τ (τ = 0 uniform, τ = 1 proportional).
* ``adaptive`` (MODS, the default; ../shared/research/multi-domain-mixing.md §8): below.

Adaptive, per domain d. Rewards are first normalised to [0, 1] per domain (declared range, or the
running range), so no domain dominates through its reward scale. For a group g of G rollouts with
normalised rewards r_i and mean r̄_g:

.. code-block:: text

    |A|_g = mean_i |r_i - r̄_g|               mean |advantage| (= 2p(1-p) for 0/1 rewards)
    inf_g = 1[max_i r_i > min_i r_i]          informative (non-zero-variance) group
    EMA over groups, per-group rate a:  X <- X + (1-(1-a)^k)(x̄ - X), bias-corrected,
                                        with k the domain's groups this step, x̄ their mean
    A_d = EMA(|A|),  I_d = EMA(inf)                                       a = ema
    m_d^fast, m_d^slow = EMAs of r̄_g                                      a = fast, slow
    learnability  l_d = ½ (I_d + min(1, 2 A_d))                  absolute scales, both in [0, 1]
    progress      P_d = min(1, |m^fast_d - m^slow_d| / progress_scale)
    exploration   b_d = c · sqrt(ln(N + 1) / (n_d + 1))    n_d groups seen, N = Σ n_d
    response      G_d = h_d - h_d(ref), S_d = n_d - n_d(ref)   held-out gain over own groups,
                  since a reference eval trailing by one to two windows of W own groups
                  r_d = clip(100 G_d / S_d / response_scale, 0, 1)
                  g_d = (C + S_d r_d) / (C + S_d)            1 before two evals; C = credit
                  e_d = S_d r_d / (C + S_d)                  evidence of response; 1 before
    s_d = g_d (w_learn · l_d + w_progress · P_d) + b_d
    π_learn ∝ prior_d · exp(s_d / τ)                         prior = static mixture

    held-out h_d (latest), h*_d (best so far); se = sqrt(p̃(1-p̃)/n), p̃ = (h n + 1)/(n + 2)
    regression alarm  R_d = clip((h*_d - h_d) / sqrt(se_d² + se*_d²) - κ, 0, R_max)
                      (active until a later eval recovers to within κ standard errors)
    deficit           D_d = e_d · w_def · (max_j a_j - a_d) · 1[I_d > l_min]
                      a = held-out score, or m^slow before the first eval
    π_prot ∝ (R_d + D_d) / max(I_d, z_min)                   ratio-preserving: buys real gradient
    ρ = min(ρ_max, Σ_d (R_d + D_d) / R_max)
    q = (1 - ρ) π_learn + ρ π_prot
    target = floor · prior + (1 - floor) · q                 no domain below floor · prior_d
    π_t = (1 - β) π_{t-1} + β · target                       β = smoothing; π_0 = prior

The response gate is what stops a domain that takes samples without improving (reward variance
on guessable answers, say) from buying more: learnability says a domain's groups carry gradient,
the response says whether that gradient moves its held-out score. Without held-out evaluations
g_d stays 1.

Allocation: n_d = largest-remainder rounding of B π_d + carry_d, carry_d <- B π_d + carry_d - n_d,
so realised counts track the intended mixture within one task per domain, over any horizon.
"""

from __future__ import annotations

from rlhub.mixture import load_mixture
from rlhub.scheduler.core import BUILTIN_STRATEGIES, Scheduler, SchedulerLike
from rlhub.scheduler.runlog import LOG_NAME, log_weights, read_weights

STRATEGIES = tuple(sorted(BUILTIN_STRATEGIES))  # rlhub's own; a registry may hold more

__all__ = sorted(["LOG_NAME", "STRATEGIES", "Scheduler", "SchedulerLike", "load_mixture",
                  "log_weights", "read_weights"])
