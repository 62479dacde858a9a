"""The Scheduler API: strategies, allocation, task streams, observations, refills, state."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
import toyplug

import rlhub
from rlhub import DomainNotFound, Registry, SchedulerError, hookimpl
from rlhub.mixture import DEFAULT_PARAMS, load_mixture
from rlhub.scheduler import Scheduler

TWO = {"strategy": "adaptive", "domains": {"a": {"weight": 1.0, "size": 500},
                                           "b": {"weight": 1.0, "size": 100}}}


def adaptive(names: list[str], **params: Any) -> Scheduler:
    domains = {n: {"reward_range": [0, 1]} for n in names}
    return Scheduler.simulation({"strategy": "adaptive", "domains": domains, "params": params})


def feed(sched: Scheduler, rng: np.random.Generator, rates: dict[str, float], steps: int,
         batch: int = 32, group: int = 8) -> None:
    """Drive the scheduler with Bernoulli rewards at fixed per-domain pass rates."""
    for _ in range(steps):
        for domain, k in sched.allocate(batch).items():
            sched.observe(domain, (rng.random((k, group)) < rates[domain]).astype(float).tolist())


# -- construction and strategies -------------------------------------------------------------


def test_a_simulation_accepts_unregistered_names():
    sched = rlhub.Scheduler.simulation(TWO)
    assert sched.weights() == {"a": 0.5, "b": 0.5}


def test_a_simulation_cannot_sample_and_says_what_to_build_instead():
    sched = rlhub.Scheduler.simulation(TWO)
    with pytest.raises(SchedulerError, match=r"cannot sample tasks: a simulation has no registry; "
                                             r"build the scheduler with Scheduler.from_config"):
        sched.sample(4)



def test_sampling_names_its_registry_lacks_fails_with_a_clear_error(registry):
    sched = Scheduler(load_mixture(TWO), registry)
    with pytest.raises(DomainNotFound, match=r"cannot sample tasks: unknown domain 'a'.*sample\(\) "
                                             r"needs registered domains"):
        sched.sample(4)


def test_uniform_gives_every_unit_the_same_mass_and_a_group_counts_as_one_unit(registry):
    sched = Scheduler.from_config({"strategy": "uniform", "domains": {
        "toy/*": 7, "rg/*": {"group": "rg", "weight": 9}}}, registry)
    w = sched.weights()
    assert w["toy/copy-v1"] == pytest.approx(1 / 3)
    assert w["rg/a-v1"] == pytest.approx(1 / 15)
    assert sum(w.values()) == pytest.approx(1.0)


def test_static_follows_weights_and_members_share_their_groups_weight(registry):
    sched = Scheduler.from_config({"strategy": "static", "domains": {
        "toy/copy-v1": 1, "rg/*": {"group": "rg"}, "rg/a-v1": {"weight": 6}},
        "groups": {"rg": {"weight": 3}}}, registry)
    w = sched.weights()
    assert w["toy/copy-v1"] == pytest.approx(0.25)
    assert w["rg/a-v1"] == pytest.approx(0.75 * 6 / 10)
    assert w["rg/b-v1"] == pytest.approx(0.75 / 10)


@pytest.mark.parametrize("tau", [0.0, 0.5, 1.0])
def test_temperature_is_proportional_to_size_to_the_power_tau(tau):
    sched = Scheduler.simulation({"strategy": "temperature", "params": {"tau": tau},
                                   "domains": {"a": {"size": 900}, "b": {"size": 100}}})
    expected = 900 ** tau / (900 ** tau + 100 ** tau)
    assert sched.weights()["a"] == pytest.approx(expected)


def test_temperature_takes_sizes_from_manifests(registry):
    sched = Scheduler.from_config({"strategy": "temperature", "params": {"tau": 1.0},
                                   "domains": ["rg/a-v1", "rg/e-v1"]}, registry)
    assert sched.weights()["rg/e-v1"] == pytest.approx(500 / 600)


def test_temperature_without_a_size_names_the_domain_and_the_fix():
    with pytest.raises(SchedulerError, match=r"field domains.b.size: expected a dataset size for "
                                             r"the temperature strategy, found none"):
        Scheduler.simulation({"strategy": "temperature", "domains": {"a": {"size": 5}, "b": {}}})


def test_fixed_strategies_ignore_observations():
    sched = Scheduler.simulation({"strategy": "static", "domains": {"a": 3, "b": 1}})
    sched.observe("a", [[1.0] * 8] * 20)
    sched.observe("b", [[0.0, 1.0] * 4] * 20)
    assert sched.weights() == pytest.approx({"a": 0.75, "b": 0.25})


def test_an_unknown_strategy_is_reported_with_the_built_ins():
    with pytest.raises(SchedulerError, match=r"unknown strategy 'adaptiv'; did you mean "
                                             r"'adaptive'\? No installed plugin provides it"):
        Scheduler.simulation({"strategy": "adaptiv", "domains": ["a"]})


class Fixed:
    """A plugin's scheduler: always all mass on the first domain."""

    def __init__(self, config: dict[str, Any]):
        self.first = next(iter(config["domains"]))

    def weights(self) -> dict[str, float]:
        return {self.first: 1.0}


class SchedulerPlugin:
    PLUGIN_NAME = "myplug"

    @hookimpl
    def rlhub_make_scheduler(self, config: dict[str, Any]) -> Any:
        return Fixed(config) if config["strategy"] == "first" else None


def test_a_plugin_can_ship_its_own_strategy_through_the_hook():
    reg = Registry(autoload=False, plugins=[toyplug, SchedulerPlugin()])
    made = Scheduler.from_config({"strategy": "first", "domains": ["toy/*"]}, reg)
    assert isinstance(made, Fixed) and made.weights() == {"toy/copy-v1": 1.0}
    builtin = Scheduler.from_config({"strategy": "uniform", "domains": ["toy/*"]}, reg)
    assert isinstance(builtin, Scheduler)


# -- adaptive ------------------------------------------------------------------------------


def test_adaptive_moves_mass_from_saturated_and_hopeless_domains_to_learnable_ones():
    sched = adaptive(["easy", "mid", "hard"])
    feed(sched, np.random.default_rng(0), {"easy": 1.0, "mid": 0.5, "hard": 0.0}, steps=40)
    w = sched.weights()
    assert w["mid"] > 0.6
    assert w["mid"] > 3 * w["easy"] and w["mid"] > 3 * w["hard"]


def learn_while_sampled(sched: Scheduler, rng: np.random.Generator, steps: int,
                        eval_every: int = 10, batch: int = 16) -> dict[str, float]:
    """Two domains with the same reward variance at the start: ``stuck`` stays at p = 0.5
    whatever it gets; ``learner`` gains 0.0002 per group it takes, up to 0.95. Held-out scores
    (the true pass rates, 400 items) every ``eval_every`` steps."""
    rate = {"stuck": 0.5, "learner": 0.4}
    for step in range(1, steps + 1):
        for domain, k in sched.allocate(batch).items():
            sched.observe(domain, (rng.random((k, 8)) < rate[domain]).astype(float).tolist())
            if domain == "learner":
                rate["learner"] = min(0.95, rate["learner"] + 0.0002 * k)
        if step % eval_every == 0:
            for domain, p in rate.items():
                sched.observe_eval(domain, p, 400)
    return rate


def test_a_domain_that_takes_samples_without_improving_stops_buying_them():
    gated = adaptive(["stuck", "learner"])
    learned = learn_while_sampled(gated, np.random.default_rng(5), steps=120)["learner"]
    signals = gated.signals()
    assert signals["stuck"]["response_groups"] > 100 and signals["stuck"]["response_gain"] == 0
    assert signals["learner"]["response_gain"] > 0.02
    assert gated.weights()["learner"] > 0.8
    # Variance alone (an unbounded credit: the response is never trusted) keeps paying "stuck",
    # and the learner learns less on the same budget.
    blind = adaptive(["stuck", "learner"], credit=1e9)
    assert learn_while_sampled(blind, np.random.default_rng(5), steps=120)["learner"] < learned
    assert blind.weights()["stuck"] > 1.5 * gated.weights()["stuck"]


def test_a_new_domain_gets_credit_before_its_response_is_judged():
    weights = {}
    for credit in (64, 0):
        sched = adaptive(["stuck", "learner"], credit=credit)
        learn_while_sampled(sched, np.random.default_rng(6), steps=3, eval_every=1)
        weights[credit] = sched.weights()["stuck"]
    assert weights[64] > 0.42  # about 24 groups each: too few to judge either
    assert weights[0] < weights[64] - 0.05  # without credit, the first evals already judge


def test_a_flat_domain_is_not_paid_for_the_progress_of_the_domains_that_rise_beside_it():
    """``guess`` keeps reward variance (p = 0.5: guessable answers) and a flat held-out score;
    three learners rise at different speeds. With each evaluation round's mean removed, the flat
    domain's changes correlate with the learners' (crediting co-moving domains' gains paid it
    about twice the floor); its response is its own gain, so it keeps only the floor."""
    names = ["guess", "fast", "mid", "slow"]
    sched = adaptive(names)
    rng = np.random.default_rng(12)
    rate = {"guess": 0.5, "fast": 0.3, "mid": 0.3, "slow": 0.3}
    speed = {"guess": 0.0, "fast": 0.0004, "mid": 0.0002, "slow": 0.0001}
    taken = dict.fromkeys(names, 0)
    for step in range(1, 401):
        for domain, k in sched.allocate(8).items():
            sched.observe(domain, (rng.random((k, 8)) < rate[domain]).astype(float).tolist())
            rate[domain] = min(0.95, rate[domain] + speed[domain] * k)
            taken[domain] += k if step > 100 else 0
        if step % 50 == 0:
            for domain, p in rate.items():
                sched.observe_eval(domain, p + rng.normal(0, 0.005) * (domain != "guess"), 400)
    floor = DEFAULT_PARAMS["adaptive"]["floor"] / len(names)
    assert taken["guess"] / sum(taken.values()) < 1.3 * floor
    assert sched.signals()["guess"]["response_gain"] == 0


def test_no_domain_starves_below_the_exploration_floor():
    names = [f"d{i}" for i in range(10)]
    sched = adaptive(names, floor=0.2, tau=0.05)
    rates = {n: 0.5 if n == "d0" else 1.0 for n in names}
    feed(sched, np.random.default_rng(1), rates, steps=200)
    w = sched.weights()
    assert w["d0"] > 0.5
    assert min(w.values()) >= 0.2 / 10 * (1 - 1e-12)
    assert sum(w.values()) == pytest.approx(1.0)


def test_the_regression_guard_raises_a_regressed_domains_weight_until_it_recovers():
    sched = adaptive(["a", "b"], w_deficit=0.0, kappa=2.0)
    rng = np.random.default_rng(2)
    feed(sched, rng, {"a": 0.5, "b": 0.5}, steps=20)
    for name in ("a", "b"):
        sched.observe_eval(name, 0.8, 400)
        sched.observe_eval(name, 0.8, 400)
    assert 0.4 < sched.weights()["b"] < 0.6
    sched.observe_eval("b", 0.6, 400)  # ~7 standard errors below its best
    feed(sched, rng, {"a": 0.5, "b": 0.5}, steps=20)
    alarmed = sched.weights()["b"]
    assert alarmed > 0.68
    sched.observe_eval("b", 0.79, 400)  # back within kappa standard errors of its best
    feed(sched, rng, {"a": 0.5, "b": 0.5}, steps=20)
    assert sched.weights()["b"] < 0.6


def test_the_deficit_term_favours_the_worst_domain_while_it_is_learnable():
    sched = adaptive(["strong", "weak"], kappa=100.0)
    rng = np.random.default_rng(3)
    feed(sched, rng, {"strong": 0.5, "weak": 0.5}, steps=10)
    sched.observe_eval("strong", 0.9, 200)
    sched.observe_eval("weak", 0.3, 200)
    feed(sched, rng, {"strong": 0.5, "weak": 0.5}, steps=10)
    assert sched.weights()["weak"] > 0.6


def test_declared_reward_ranges_make_reward_scale_irrelevant():
    small = Scheduler.simulation({"domains": {"a": {"reward_range": [0, 1]},
                                               "b": {"reward_range": [0, 1]}}})
    big = Scheduler.simulation({"domains": {"a": {"reward_range": [0, 1]},
                                             "b": {"reward_range": [0, 10]}}})
    rng = np.random.default_rng(4)
    for _ in range(30):
        groups = {d: (rng.random((8, 8)) < p).astype(float) for d, p in (("a", 0.9), ("b", 0.5))}
        for sched, scale in ((small, 1.0), (big, 10.0)):
            sched.observe("a", groups["a"].tolist())
            sched.observe("b", (groups["b"] * scale).tolist())
            sched.weights()
    assert big.weights() == pytest.approx(small.weights(), rel=1e-9)
    assert big.weights()["b"] > big.weights()["a"]


def test_running_normalisation_learns_the_scale_of_an_undeclared_range():
    sched = Scheduler.simulation({"domains": {"a": {}, "b": {"normalize": "running"}}})
    sched.observe("a", [[0.0, 1.0]] * 4)
    sched.observe("b", [[0.0, 50.0]] * 4)
    signals = sched.signals()
    assert signals["b"]["abs_adv"] == pytest.approx(signals["a"]["abs_adv"]) == pytest.approx(0.5)


# -- allocation and tasks ---------------------------------------------------------------------


def test_allocation_is_stratified_and_tracks_the_mixture_within_one_task():
    sched = Scheduler.simulation({"strategy": "static",
                                   "domains": {"a": 0.61, "b": 0.3, "c": 0.09}})
    totals = {"a": 0, "b": 0, "c": 0}
    for step in range(1, 60):
        alloc = sched.allocate(7)
        assert sum(alloc.values()) == 7
        for d, k in alloc.items():
            totals[d] += k
        for d, w in sched.weights().items():
            assert abs(totals[d] - 7 * step * w) < 1.0


def test_sample_draws_each_domains_own_stream_deterministically(registry):
    config = {"strategy": "uniform", "domains": ["toy/*"], "seed": 3}
    first = Scheduler.from_config(config, registry)
    second = Scheduler.from_config(config, registry)
    batch = first.sample(6)
    assert [t.to_dict() for t in batch] == [t.to_dict() for t in second.sample(6)]
    reverse = registry.get("toy/reverse-v1")
    assert sorted(t.id for t in batch if t.domain == "toy/reverse-v1") == sorted(
        t.id for t in reverse.sample(3, split="train", seed=3, start=0))
    later = first.sample(6)
    assert sorted(t.id for t in later if t.domain == "toy/reverse-v1") == sorted(
        t.id for t in reverse.sample(3, split="train", seed=3, start=3))


def test_zero_variance_groups_are_counted_and_refilled_from_the_same_domain(registry):
    sched = Scheduler.from_config({"strategy": "uniform", "domains": ["toy/*"]}, registry)
    sched.sample(8)
    zero = sched.observe("toy/copy-v1", [[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]])
    assert zero == 3
    assert sched.counts()["toy/copy-v1"]["owed"] == 3
    refills = sched.refill("toy/copy-v1", zero)
    assert [t.domain for t in refills] == ["toy/copy-v1"] * 3
    assert sched.allocate(0) == {}
    row = sched.counts()["toy/copy-v1"]
    assert row == {"sampled": 4, "refilled": 3, "groups": 4, "zero_variance": 3, "all_pass": 1,
                   "all_fail": 2, "owed": 0}
    assert sched.weights() == {"toy/copy-v1": 0.5, "toy/reverse-v1": 0.5}


def test_refilled_tasks_continue_the_domains_stream(registry):
    sched = Scheduler.from_config({"strategy": "uniform", "domains": ["toy/copy-v1"]}, registry)
    first = sched.sample(2)
    refill = sched.refill("toy/copy-v1", 2)
    expected = registry.get("toy/copy-v1").sample(4, split="train", seed=0, start=0)
    assert sorted(t.id for t in first + refill) == sorted(t.id for t in expected)


def test_observe_batch_matches_one_observe_call_per_domain():
    rng = np.random.default_rng(5)
    one, many = adaptive(["a", "b", "c"]), adaptive(["a", "b", "c"])
    for _ in range(10):
        domains = list(rng.choice(["a", "b", "c"], size=24))
        rewards = (rng.random((24, 8)) < 0.4).astype(float)
        zero = one.observe_batch(domains, rewards)
        for d in ("a", "b", "c"):
            rows = [rewards[i].tolist() for i, x in enumerate(domains) if x == d]
            assert many.observe(d, rows) == zero.get(d, 0)
    assert one.weights() == pytest.approx(many.weights(), rel=1e-12)
    assert one.counts() == many.counts()


def test_rollouts_whose_failure_is_not_the_models_never_move_the_mixture():
    clean, faulty = adaptive(["a", "b"]), adaptive(["a", "b"])
    rng = np.random.default_rng(3)
    for _ in range(40):
        groups = (rng.random((4, 8)) < 0.5).astype(float).tolist()
        zero = clean.observe("a", groups)
        # the same outcomes plus infrastructure faults: extra None rollouts and all-None groups
        assert faulty.observe("a", [g + [None, None] for g in groups] + [[None] * 8]) == zero
        assert faulty.observe("b", [[None] * 8, [None]]) == 0
    assert faulty.weights() == pytest.approx(clean.weights(), rel=1e-12)
    assert faulty.counts() == clean.counts()
    assert faulty.counts()["b"]["groups"] == 0


def test_observe_batch_leaves_out_nan_rollouts_like_observe_leaves_out_none():
    one, many = adaptive(["a", "b"]), adaptive(["a", "b"])
    rewards = [[1.0, 0.0, None, 1.0], [None] * 4, [0.0, None, 0.0, 0.0]]
    zero = one.observe_batch(["a", "b", "b"], rewards)
    assert zero == {"b": 1} == {"b": many.observe("b", rewards[1:])}
    many.observe("a", rewards[:1])
    assert one.weights() == pytest.approx(many.weights(), rel=1e-12)
    assert one.counts() == many.counts() and one.counts()["b"]["groups"] == 1


def test_observation_errors_name_the_domain_and_what_was_wrong():
    sched = rlhub.Scheduler.simulation(TWO)
    with pytest.raises(SchedulerError, match=r"unknown domain 'c'"):
        sched.observe("c", [[1.0]])
    with pytest.raises(SchedulerError, match=r"expected one list of rewards per group, found a "
                                             r"flat list starting \[1.0, 0.0\]"):
        sched.observe("a", [1.0, 0.0])
    with pytest.raises(SchedulerError, match=r"found a flat list starting \[None, 1.0\]"):
        sched.observe("a", [None, 1.0])
    with pytest.raises(SchedulerError, match=r"domain 'a': group 1: expected finite rewards"):
        sched.observe("a", [[1.0, 0.0], [math.nan, 1.0]])
    with pytest.raises(SchedulerError, match=r"domain 'b': group 0 is empty"):
        sched.observe("b", [[]])
    with pytest.raises(SchedulerError, match=r"expected rewards of shape \(2, G\)"):
        sched.observe_batch(["a", "b"], [[1.0, 0.0]])
    with pytest.raises(SchedulerError, match=r"expected a finite eval score and n >= 1"):
        sched.observe_eval("a", 0.5, 0)
    with pytest.raises(SchedulerError, match=r"expected a batch size n >= 0, found -1"):
        sched.allocate(-1)


# -- state ---------------------------------------------------------------------------------


def run_script(sched: Scheduler, rng: np.random.Generator, steps: int) -> list[Any]:
    """A training loop's interaction; returns every weight vector and allocation seen."""
    seen: list[Any] = []
    for step in range(steps):
        alloc = sched.allocate(16)
        for d, k in alloc.items():
            sched.observe(d, (rng.random((k, 4)) < 0.3 + 0.1 * int(d[1:])).astype(float).tolist())
        if step % 3 == 0:
            sched.observe_eval("d1", float(rng.random()), 100)
        seen.append((alloc, sched.weights()))
    return seen


def test_state_round_trips_through_json_and_resumes_bit_exactly():
    names = [f"d{i}" for i in range(5)]
    original = adaptive(names)
    run_script(original, np.random.default_rng(6), 25)
    state = json.loads(json.dumps(original.state_dict()))
    original.observe("d2", [[1.0, 0.0, 0.0, 0.0]])  # pending observations are part of the state
    state = json.loads(json.dumps(original.state_dict(), allow_nan=False))
    resumed = adaptive(names)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == original.state_dict()
    assert run_script(resumed, np.random.default_rng(7), 25) == run_script(
        original, np.random.default_rng(7), 25)


def test_resumed_samples_continue_every_task_stream(registry):
    config = {"strategy": "adaptive", "domains": ["toy/*", "rg/a-v1"]}
    original = Scheduler.from_config(config, registry)
    original.sample(5)
    original.observe("rg/a-v1", [[1, 0, 1]])
    resumed = Scheduler.from_config(config, registry)
    resumed.load_state_dict(json.loads(json.dumps(original.state_dict())))
    assert [t.to_dict() for t in resumed.sample(9)] == [t.to_dict() for t in original.sample(9)]


def test_loading_state_of_other_domains_is_refused():
    state = rlhub.Scheduler.simulation(TWO).state_dict()
    other = rlhub.Scheduler.simulation({"strategy": "adaptive", "domains": ["a", "c"]})
    with pytest.raises(SchedulerError, match=r"scheduler state: expected domains \['a', 'c'\] "
                                             r"\(this config\), found \['a', 'b'\]"):
        other.load_state_dict(state)
    with pytest.raises(SchedulerError, match=r"expected version 1, found 99"):
        other.load_state_dict({**state, "version": 99})


def test_allocation_never_goes_negative_while_an_adaptive_mixture_moves():
    names = [f"d{i}" for i in range(40)]
    sched = adaptive(names, tau=0.05, smoothing=1.0)
    rng = np.random.default_rng(8)
    for _ in range(60):
        alloc = sched.allocate(int(rng.integers(0, 30)))
        assert all(k > 0 for k in alloc.values())
        for d, k in alloc.items():
            sched.observe(d, (rng.random((k, 4)) < rng.random()).astype(float).tolist())
    sampled = sum(row["sampled"] for row in sched.counts().values())
    assert sampled == sum(row["groups"] for row in sched.counts().values())


def test_running_ranges_survive_a_strict_json_round_trip():
    config = {"domains": {"seen": {"normalize": "running"}, "unseen": {"normalize": "running"}}}
    original = Scheduler.simulation(config)
    original.observe("seen", [[0.0, 4.0, 2.0]])
    resumed = Scheduler.simulation(config)
    resumed.load_state_dict(json.loads(json.dumps(original.state_dict(), allow_nan=False)))
    for sched in (original, resumed):
        sched.observe("seen", [[0.0, 8.0]])
        sched.observe("unseen", [[3.0, 3.0]])
    assert resumed.state_dict() == original.state_dict()
    assert resumed.signals() == original.signals()
