"""The built-in :class:`Scheduler`: mixture decisions, stratified allocation, task streams, state."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlhub.builtin import BUILTIN_STRATEGIES
from rlhub.errors import DomainNotFound, SchedulerError, boundary, did_you_mean
from rlhub.mixture import DEFAULT_PARAMS, load_mixture
from rlhub.protocols import SchedulerLike
from rlhub.refs import load_object
from rlhub.scheduler.runlog import log_weights
from rlhub.scheduler.stats import C, DomainStats
from rlhub.scheduler.strategies import Strategy
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.protocols import RegistryLike

STATE_VERSION = 1


def _unknown_strategy(name: str, names: list[str]) -> None:
    msg = did_you_mean(name, names, what="strategy", listing="rlhub list")
    raise SchedulerError(msg.split(" Run ")[0] + " No installed plugin provides it; "
                         f"registered: {', '.join(sorted(names))}.")


class Scheduler:
    """Chooses the domain mixture of each batch and draws its tasks; see :mod:`rlhub.scheduler`.

    Build it with :meth:`from_config`. A decision is taken lazily: the first of :meth:`weights`,
    :meth:`allocate` or :meth:`sample` after new observations folds them in and moves the mixture
    once, so observing one domain at a time costs no more than observing a whole batch.
    """

    def __init__(self, config: dict[str, Any], registry: RegistryLike | None = None):
        self.config = config
        self.registry = registry
        self.ids: list[str] = list(config["domains"])
        self._index = {d: i for i, d in enumerate(self.ids)}
        self.strategy = make_strategy(config, registry)
        self._rates = {**DEFAULT_PARAMS["adaptive"], **config["params"]}
        self.stats = DomainStats(self.ids, config["domains"],
                                 window=self._rates["response_window"])
        self._pi: np.ndarray = self.strategy.prior.copy()
        self._carry = np.zeros(len(self.ids))
        self._cursor = [0] * len(self.ids)
        self._decisions = 0
        self._batches = 0
        self._checked_registry: RegistryLike | None = None

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | dict[str, Any],
                    registry: RegistryLike | None = None) -> SchedulerLike:
        """Validate a mixture and build its scheduler through the ``rlhub_make_scheduler`` hook.

        :param source: A mixture file or dict (see :mod:`rlhub.mixture`).
        :param registry: Expands globs, supplies sizes and reward ranges, serves tasks and asks
            its plugins for the scheduler; by default the process registry
            (:func:`rlhub.registry`), so a script needs nothing else.
        """
        if registry is None:
            from rlhub.plugins import registry as process_registry

            registry = process_registry()
        config = load_mixture(source, registry)
        with boundary(SchedulerError, "rlhub_make_scheduler"):
            made = registry.pm.hook.rlhub_make_scheduler(config=config, registry=registry)
        if made is not None:
            return made
        if config["strategy"] not in registry.services.strategy_refs():
            _unknown_strategy(config["strategy"], list(registry.services.strategy_refs()))
        return Scheduler(config, registry)

    @classmethod
    def simulation(cls, source: str | os.PathLike[str] | dict[str, Any]) -> Scheduler:
        """A scheduler over domain names alone, registered or not, with a built-in strategy.

        For simulations and what-if studies (``bench/scheduler.py``): it weighs and observes
        but cannot :meth:`sample`; globs are an error, since only a registry can expand them.
        """
        config = load_mixture(source, None)
        if config["strategy"] not in BUILTIN_STRATEGIES:
            _unknown_strategy(config["strategy"], list(BUILTIN_STRATEGIES))
        return Scheduler(config)

    # -- the mixture -----------------------------------------------------------------------

    def weights(self) -> dict[str, float]:
        """The mixture of the next batch, ``{domain: probability}`` in config order."""
        self._decide()
        return dict(zip(self.ids, self._pi.tolist()))

    def _decide(self) -> None:
        if self.stats.dirty or self._decisions == 0:
            self.stats.fold(self._rates)
            self._pi = self.strategy.decide(self.stats, self._pi)
            self._decisions += 1

    def allocate(self, n: int) -> dict[str, int]:
        """How many of ``n`` tasks each domain gets (stratified rounding, carried across batches).

        ``n * pi + carry`` is rounded by largest remainder and the remainder carried over, so every
        domain's cumulative count stays within one task of its cumulative intended share. Only
        domains with at least one task appear. Use this directly for external task sources.
        """
        if not isinstance(n, int) or n < 0:
            raise SchedulerError(f"expected a batch size n >= 0, found {n!r}")
        self._decide()
        target = n * self._pi + self._carry
        counts = np.maximum(np.floor(target), 0.0)
        left = n - int(counts.sum())
        frac = target - counts
        if left > 0:
            counts[np.argsort(-frac, kind="stable")[:left]] += 1
        elif left < 0:
            order = [i for i in np.argsort(frac, kind="stable") if counts[i] > 0]
            counts[order[:-left]] -= 1
        self._carry = target - counts
        self.stats.counts[C["sampled"]] += counts.astype(np.int64)
        ids = self.ids
        nonzero = np.flatnonzero(counts)
        return dict(zip([ids[i] for i in nonzero.tolist()], counts[nonzero].astype(int).tolist()))

    # -- tasks -----------------------------------------------------------------------------

    def sample(self, n: int) -> list[Task]:
        """``n`` tasks drawn per :meth:`allocate`, each domain continuing its own task stream.

        Domain ``d``'s k-th task ever drawn is ``task(split, seed, k)``, so the stream is
        deterministic and resumes exactly from :meth:`state_dict`. The batch is shuffled with a
        seed derived from the batch number.
        """
        tasks: list[Task] = []
        for domain, k in self.allocate(n).items():
            tasks += self._draw(domain, k)
        random.Random(f"{self.config['seed']}/{self._batches}").shuffle(tasks)
        self._batches += 1
        return tasks

    def refill(self, domain: str, n: int) -> list[Task]:
        """``n`` more tasks from ``domain``, to replace its zero-variance groups.

        A trainer drops zero-variance groups from the loss (they carry no GRPO gradient) and asks
        for the same number from the same domain, so the informative groups keep the intended
        mixture. Refills do not move the mixture's carry; ``counts()`` reports them.
        """
        i = self._idx(domain)
        if not isinstance(n, int) or n < 0:
            raise SchedulerError(f"refill({domain!r}): expected n >= 0, found {n!r}")
        tasks = self._draw(domain, n)
        self.stats.counts[C["refilled"], i] += n
        return tasks

    def _draw(self, domain: str, k: int) -> list[Task]:
        i = self._index[domain]
        source = self._sampling_registry().get(domain)
        start = self._cursor[i]
        self._cursor[i] += k
        return source.sample(k, split=self.config["split"], seed=self.config["seed"], start=start)

    def _sampling_registry(self) -> RegistryLike:
        registry = self.registry
        if registry is None:
            raise SchedulerError("cannot sample tasks: a simulation has no registry; build the "
                                 "scheduler with Scheduler.from_config(config) instead")
        if self._checked_registry is not registry:
            for domain in self.ids:
                try:
                    registry.manifest(domain)
                except DomainNotFound as exc:
                    raise DomainNotFound(f"cannot sample tasks: {exc} A scheduler built from "
                                         "names alone can weigh and observe them, but sample() "
                                         "needs registered domains.") from None
            self._checked_registry = registry
        return registry

    # -- observations ----------------------------------------------------------------------

    def observe(self, domain: str, group_rewards: list[list[float | None]]) -> int:
        """Record a step's groups of ``domain`` (one inner list of rollout rewards per prompt).

        A ``None`` reward marks a rollout whose failure was not the model's (a sandbox, verifier,
        judge, label or policy fault, :mod:`rlhub.failures`): it is left out, and a group left
        with no reward is not observed at all, so the mixture never learns from a fault.

        :return: How many of the groups had zero variance (all pass or all fail): refill that many.
        """
        i = self._idx(domain)
        if group_rewards and (group_rewards[0] is None
                              or isinstance(group_rewards[0], (int, float))):
            raise SchedulerError(f"observe({domain!r}): expected one list of rewards per group, "
                                 f"found a flat list starting {list(group_rewards[:3])!r}")
        return self.stats.observe(i, trainable_groups(group_rewards))

    def observe_batch(self, domains: list[str], group_rewards: Any) -> dict[str, int]:
        """:meth:`observe` for a whole batch at once: ``domains[j]`` produced group ``j``.

        ``group_rewards`` is rectangular (groups x rollouts; a list of lists or an array). This is
        the fast path for trainers holding the batch as a tensor; it returns the zero-variance
        count of each domain that had any, ready for :meth:`refill`. A NaN (what ``None`` becomes
        in a float array) marks a rollout whose failure was not the model's, as in :meth:`observe`.
        """
        rewards = np.asarray(group_rewards, dtype=float)
        if rewards.ndim != 2 or rewards.shape[0] != len(domains) or rewards.shape[1] == 0:
            raise SchedulerError(f"observe_batch: expected rewards of shape ({len(domains)}, G) "
                                 f"with G >= 1, one row per domain entry, found {rewards.shape}")
        if np.isnan(rewards).any():  # None (a fault, not the model's) became NaN: the slow path
            return self._observe_rows(domains, rewards)
        index = self._index
        try:
            idx = np.fromiter((index[d] for d in domains), dtype=np.int64, count=len(domains))
        except KeyError:
            self._idx(next(d for d in domains if d not in index))
            raise
        zero = self.stats.observe_batch(idx, rewards)
        hits = np.bincount(idx[zero], minlength=len(self.ids))
        return {self.ids[i]: int(hits[i]) for i in np.flatnonzero(hits).tolist()}

    def _observe_rows(self, domains: list[str], rewards: np.ndarray) -> dict[str, int]:
        zero: dict[str, int] = {}
        for domain, row in zip(domains, rewards.tolist()):
            n = self.observe(domain, [[None if math.isnan(r) else r for r in row]])
            if n:
                zero[domain] = zero.get(domain, 0) + n
        return zero

    def observe_eval(self, domain: str, score: float, n: int) -> None:
        """Record a held-out score of ``domain`` (mean reward over ``n`` items)."""
        self.stats.observe_eval(self._idx(domain), float(score), int(n))

    def _idx(self, domain: str) -> int:
        try:
            return self._index[domain]
        except KeyError:
            msg = did_you_mean(domain, self.ids, what="domain", listing="scheduler.weights()")
            raise SchedulerError(f"{msg.split(' Run ')[0]} This scheduler has {len(self.ids)} "
                                 f"domains; see scheduler.weights().") from None

    # -- accounting ------------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, int]]:
        """Per-domain totals: sampled, refilled, groups, zero_variance, all_pass, all_fail, owed.

        ``owed`` = zero-variance groups not yet refilled. With refills the informative groups of
        each domain match its intended share: ``groups - zero_variance ≈ sampled``.
        """
        self.stats.flush()
        table = self.stats.counts.T.tolist()
        out = {}
        for domain, values in zip(self.ids, table):
            row = dict(zip(C, values))
            row["owed"] = max(0, row["zero_variance"] - row["refilled"])
            out[domain] = row
        return out

    def signals(self) -> dict[str, dict[str, float]]:
        """The per-domain statistics behind the mixture, for logging and debugging."""
        self._decide()
        s = self.stats
        cols = {"weight": self._pi, "informative": s.value("inform"), "abs_adv": s.value("learn"),
                "reward_fast": s.value("fast"), "reward_slow": s.value("slow"),
                "held_out": s.eval_row("h_last"), "held_out_best": s.eval_row("h_best"),
                "response_gain": s.eval_row("gain"), "response_groups": s.eval_row("span")}
        cols = {k: np.asarray(v).tolist() for k, v in cols.items()}
        return {d: {k: v[i] for k, v in cols.items()} for i, d in enumerate(self.ids)}

    def log(self, run_dir: str | os.PathLike[str], step: int, **extra: Any) -> Path:
        """Append the current weights to ``RUN_DIR/scheduler.jsonl`` (see :mod:`.runlog`)."""
        return log_weights(run_dir, step, self.weights(), **extra)

    # -- state -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot; :meth:`load_state_dict` resumes it bit-exactly."""
        return {
            "version": STATE_VERSION,
            "strategy": self.config["strategy"],
            "domains": list(self.ids),
            "pi": self._pi.tolist(),
            "carry": self._carry.tolist(),
            "cursor": list(self._cursor),
            "decisions": self._decisions,
            "batches": self._batches,
            "stats": self.stats.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output; the domains and strategy must match this config."""
        if state.get("version") != STATE_VERSION:
            raise SchedulerError(f"scheduler state: expected version {STATE_VERSION}, "
                                 f"found {state.get('version')!r}")
        for key, mine in (("strategy", self.config["strategy"]), ("domains", self.ids)):
            if state.get(key) != mine:
                raise SchedulerError(f"scheduler state: expected {key} {_short(mine)} (this "
                                     f"config), found {_short(state.get(key))}")
        self._pi = np.asarray(state["pi"], dtype=float)
        self._carry = np.asarray(state["carry"], dtype=float)
        self._cursor = [int(x) for x in state["cursor"]]
        self._decisions = int(state["decisions"])
        self._batches = int(state["batches"])
        self.stats.load_state_dict(state["stats"])


def trainable_groups(group_rewards: list[list[float | None]]) -> list[list[float]]:
    """``group_rewards`` without its ``None`` entries, and without the groups left empty."""
    if not any(None in group for group in group_rewards):
        return group_rewards  # type: ignore[return-value]
    kept = ([r for r in group if r is not None] for group in group_rewards)
    return [group for group in kept if group]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."


def make_strategy(config: dict[str, Any], registry: RegistryLike | None = None) -> Strategy:
    """The strategy named by ``config["strategy"]``, from ``registry``'s strategies (None: the
    built-in ones)."""
    name = config["strategy"]
    refs = registry.services.strategy_refs() if registry is not None else BUILTIN_STRATEGIES
    if name not in refs:
        raise SchedulerError(did_you_mean(name, refs, what="strategy", listing="rlhub list"))
    with boundary(SchedulerError, f"strategy {name!r} ({refs[name]})"):
        return load_object(refs[name])(config)  # type: ignore[no-any-return]
