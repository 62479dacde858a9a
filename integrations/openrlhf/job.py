"""``rlhub train CONFIG --backend openrlhf``: the ``ray job submit`` command for OpenRLHF 0.11.2.

A training config (YAML; see ``examples/openrlhf.yaml``) names a mixture, a model, how OpenRLHF
reaches the server, and OpenRLHF flags. :func:`build_command` turns it into::

    ray job submit --address ADDR --runtime-env-json '{"env_vars": {...}}' \\
      -- python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path M \\
      --data.prompt_dataset PROMPTS.jsonl --data.input_key prompt --data.label_key label \\
      --data.apply_chat_template --rollout.n_samples_per_prompt 8 \\
      --algo.advantage.estimator group_norm [--algo.dynamic_filtering_enable ...] \\
      --reward.remote_url http://SERVER/get_reward       # mode: reward (single turn)
      --train.agent_func_path .../integrations/openrlhf/agent.py   # mode: agent (multi-turn, online mixture)
      [every flag of the config's ``openrlhf:`` mapping]

using 0.11.2's dotted flags (the flat pre-0.10.2 names such as ``--remote_rm_url`` no longer
parse). The prompt dataset is written by :mod:`rlhub.integrations.openrlhf.export` with exact proportions (rows of
role ``train``) and the eval dataset from the held-out split (role ``eval``: played as written,
never observed by the scheduler). The group size has one source: the config's
``n_samples_per_prompt``, or ``rollout.n_samples_per_prompt`` under ``openrlhf:``; giving both
with different values is refused. Before submitting to a running server (``server.url``) it is
checked: it answers, speaks what the agent needs, has a scheduler when the agent is to schedule,
and serves every domain of the mixture.
:class:`OpenRLHFTrainer` is what the ``rlhub_make_trainer`` hook returns for this backend.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.errors import TrainerError

if TYPE_CHECKING:
    from rlhub.plugins import Registry

#: ``algo:`` names → ``--algo.advantage.estimator`` values of 0.11.2.
ALGORITHMS = {
    "ppo": "gae", "gae": "gae",
    "grpo": "group_norm", "group_norm": "group_norm",
    "dr_grpo": "dr_grpo", "dr-grpo": "dr_grpo",
    "rloo": "rloo",
    "reinforce++": "reinforce", "reinforce": "reinforce",
    "reinforce++-baseline": "reinforce_baseline", "reinforce_baseline": "reinforce_baseline",
    "flash_reinforce": "flash_reinforce",
}
GROUP_ALGORITHMS = ("group_norm", "dr_grpo", "rloo", "reinforce_baseline")
MODES = ("reward", "agent")
#: The fields of a mixture (``schemas/mixture.schema.json``), for configs that are one.
MIXTURE_KEYS = ("strategy", "seed", "split", "domains", "groups", "params", "eval", "normalize",
                "judges")
#: Defaults added for GRPO-style estimators unless the config's ``openrlhf:`` sets them.
KL_LOSS_DEFAULTS = {"algo.kl.use_loss": True, "algo.kl.estimator": "k3", "algo.kl.init_coef": 1e-3}


@dataclass
class Plan:
    """Everything one OpenRLHF launch needs; :meth:`shell` gives the printable command."""

    command: list[str]
    server_url: str
    env_vars: dict[str, str]

    def shell(self) -> str:
        return shlex.join(self.command)


def load_config(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    """Read a training config (YAML/JSON path or dict) and check the fields this backend reads."""
    if isinstance(source, dict):
        config, where = dict(source), "training config"
    else:
        import yaml

        where = f"training config {source}"
        try:
            config = yaml.safe_load(Path(source).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise TrainerError(f"{where}: expected a readable YAML file, found {exc}") from None
        config.setdefault("base_dir", str(Path(source).resolve().parent))
        config.setdefault("config_path", str(Path(source).resolve()))
    if not isinstance(config, dict):
        raise TrainerError(f"{where}: expected a mapping, found {type(config).__name__}")
    if not config.get("mixture") and config.get("domains"):  # the config is itself a mixture
        config["mixture"] = {k: config[k] for k in MIXTURE_KEYS if k in config}
    for key in ("mixture", "model"):
        if not config.get(key):
            raise TrainerError(f"{where}: expected the field {key!r}, found none")
    mode = config.get("mode", "reward")
    if mode not in MODES:
        raise TrainerError(f"{where}: field mode: expected one of {MODES}, found {mode!r}")
    algo = str(config.get("algo", "grpo")).lower()
    if algo not in ALGORITHMS:
        raise TrainerError(f"{where}: field algo: expected one of {sorted(ALGORITHMS)}, "
                           f"found {algo!r}")
    n = group_size(config, where)
    if ALGORITHMS[algo] in GROUP_ALGORITHMS and n < 2:
        raise TrainerError(f"{where}: algo {algo} needs n_samples_per_prompt >= 2, found {n}")
    if config.get("dynamic_filtering") and n < 2:
        raise TrainerError(f"{where}: dynamic_filtering needs n_samples_per_prompt >= 2, "
                           f"found {n}")
    return config


def group_size(config: dict[str, Any], where: str = "training config") -> int:
    """``n_samples_per_prompt``, from wherever the config gives it (see the module docstring)."""
    top = config.get("n_samples_per_prompt")
    passed = (config.get("openrlhf") or {}).get("rollout.n_samples_per_prompt")
    if top is not None and passed is not None and int(top) != int(passed):
        raise TrainerError(f"{where}: n_samples_per_prompt is {top} but openrlhf: "
                           f"rollout.n_samples_per_prompt is {passed}; give the group size in one "
                           "place (the agent, the server's leases and OpenRLHF must agree)")
    return int(top if top is not None else passed if passed is not None else 8)


def resolve(config: dict[str, Any], path: str | None) -> str | None:
    """A config path relative to the config file's folder."""
    if path is None or "://" in str(path):
        return path
    p = Path(path)
    return str(p if p.is_absolute() else Path(config.get("base_dir", ".")) / p)


def mixture_file(config: dict[str, Any], out: Path) -> str:
    """The mixture as a file path: the configured one, or ``out/mixture.yaml`` for an inline one."""
    mixture = config["mixture"]
    if not isinstance(mixture, dict):
        return str(resolve(config, str(mixture)))
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    path = out / "mixture.yaml"
    path.write_text(yaml.safe_dump(mixture, sort_keys=False))
    return str(path)


def agent_path(config: dict[str, Any]) -> str:
    """The agent module's path as the Ray workers see it (default: this install's file)."""
    if config.get("agent_path"):
        return str(config["agent_path"])
    return str(Path(__file__).resolve().with_name("agent.py"))


def flags(options: dict[str, Any]) -> list[str]:
    """``{"a.b": v}`` as argv: True → ``--a.b``; False/None → nothing; lists → several values."""
    argv: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        argv.append(f"--{name}")
        if value is True:
            continue
        argv += [_text(v) for v in value] if isinstance(value, (list, tuple)) else [_text(value)]
    return argv


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def openrlhf_options(config: dict[str, Any], dataset: str, server_url: str,
                     eval_dataset: str | None = None) -> dict[str, Any]:
    """The ``train_ppo_ray`` options, config's ``openrlhf:`` mapping applied last."""
    estimator = ALGORITHMS[str(config.get("algo", "grpo")).lower()]
    options: dict[str, Any] = {
        "actor.model_name_or_path": config["model"],
        "data.prompt_dataset": dataset,
        "data.input_key": "prompt",
        "data.label_key": "label",
        "data.apply_chat_template": True,
        "rollout.n_samples_per_prompt": group_size(config),
        "algo.advantage.estimator": estimator,
    }
    if estimator in ("group_norm", "dr_grpo"):
        options.update(KL_LOSS_DEFAULTS)
    band = config.get("dynamic_filtering")
    if band:
        low, high = band if isinstance(band, (list, tuple)) else (0.0, 1.0)
        options.update({"algo.dynamic_filtering_enable": True,
                        "algo.dynamic_filtering_range": [float(low), float(high)]})
    if config.get("mode", "reward") == "agent":
        options["train.agent_func_path"] = agent_path(config)
    else:
        options["reward.remote_url"] = server_url.rstrip("/") + "/get_reward"
    if eval_dataset:
        options["eval.dataset"] = eval_dataset
    options.update(config.get("openrlhf") or {})
    return options


def agent_env(config: dict[str, Any], server_url: str) -> dict[str, str]:
    """The env vars the agent module reads (see :mod:`rlhub.integrations.openrlhf.agent`)."""
    env = {"RLHUB_SERVER_URL": server_url.rstrip("/"),
           "RLHUB_SCHEDULE": "1" if schedules(config) else "0"}
    env.update({k: str(v) for k, v in (config.get("agent_env") or {}).items()})
    return env


def schedules(config: dict[str, Any]) -> bool:
    """Whether the agent replaces training rows with the scheduler's tasks."""
    return config.get("mode") == "agent" and bool(config.get("schedule", True))


def build_command(config: dict[str, Any], dataset: str, server_url: str,
                  eval_dataset: str | None = None) -> Plan:
    """The ``ray job submit`` command for ``config`` (see the module docstring)."""
    ray = config.get("ray") or {}
    runtime_env: dict[str, Any] = dict(ray.get("runtime_env") or {})
    env_vars = agent_env(config, server_url) if config.get("mode") == "agent" else {}
    if env_vars:
        runtime_env["env_vars"] = {**runtime_env.get("env_vars", {}), **env_vars}
    if ray.get("working_dir"):
        runtime_env["working_dir"] = ray["working_dir"]
    command = ["ray", "job", "submit", "--address", str(ray.get("address",
                                                                "http://127.0.0.1:8265"))]
    if runtime_env:
        command += ["--runtime-env-json", json.dumps(runtime_env, sort_keys=True)]
    options = openrlhf_options(config, dataset, server_url, eval_dataset)
    command += ["--", "python3", "-m", "openrlhf.cli.train_ppo_ray", *flags(options)]
    return Plan(command, server_url, env_vars)


def train_ppo_argv(plan: Plan) -> list[str]:
    """The ``train_ppo_ray`` arguments of a plan (what follows ``-m openrlhf.cli.train_ppo_ray``)."""
    index = plan.command.index("openrlhf.cli.train_ppo_ray")
    return plan.command[index + 1:]


# -- the trainer backend -------------------------------------------------------------------


class OpenRLHFTrainer:
    """``rlhub train --backend openrlhf``: export the prompts, then print or submit the job.

    Without ``submit`` it writes the dataset(s) into ``out`` and returns the commands: the
    ``rlhub serve`` to start (unless ``server.url`` names a running server) and the ``ray job
    submit``. With ``submit`` it starts the server (or checks the configured one answers), runs
    the job to completion, and stops the server it started.
    """

    def __init__(self, config: dict[str, Any], registry: Registry):
        from rlhub.judges import mixture_judges

        self.config = load_config(config)
        self.registry = registry
        if isinstance(self.config["mixture"], dict):  # copied to out/mixture.yaml for the server:
            # its judges are checked here, where the config it came from is still known
            mixture_judges(self.config["mixture"], registry, origin=self.config.get("config_path"))
        self.out = Path(self.config.get("out") or "runs/openrlhf")
        self.submit = bool(self.config.get("submit"))

    def run(self) -> dict[str, Any]:
        dataset, eval_dataset, counts = self._export()
        server = self.config.get("server") or {}
        url = server.get("url") or server.get("public_url") or \
            f"http://{server.get('host', '127.0.0.1')}:{int(server.get('port', 8000))}"
        plan = build_command(self.config, dataset, url, eval_dataset)
        serve = self._serve_argv()
        result = {"backend": "openrlhf", "dataset": dataset, "eval_dataset": eval_dataset,
                  "counts": counts, "server_url": url, "command": plan.command,
                  "shell": plan.shell(), "serve_command": None if server.get("url") else serve}
        if self.submit:
            result["returncode"] = self._submit(plan, serve if not server.get("url") else None)
        return result

    def _export(self) -> tuple[str, str | None, dict[str, int]]:
        from rlhub.integrations.openrlhf.export import export_tasks, stochastic_domains, write_jsonl
        from rlhub.labels import load_key

        registry = self.registry
        data = self.config.get("data") or {}
        mixture = mixture_file(self.config, self.out)
        key = load_key(self._server().get("label_key_file"))
        tasks, counts = export_tasks(mixture, int(data.get("n", 10_000)), registry)
        dataset = str(self.out / "prompts.jsonl")
        write_jsonl(dataset, tasks, "train", key, stochastic_domains(tasks, registry))
        eval_dataset = None
        if int(data.get("eval_n", 0)):
            held, _ = export_tasks(mixture, int(data["eval_n"]), registry,
                                   split=str(data.get("eval_split", "test")))
            eval_dataset = str(self.out / "eval.jsonl")
            write_jsonl(eval_dataset, held, "eval", key, stochastic_domains(held, registry))
        return dataset, eval_dataset, counts

    def _domains(self) -> set[str]:
        from rlhub.scheduler import Scheduler

        return set(Scheduler.from_config(mixture_file(self.config, self.out),
                                         self.registry).weights())

    def _server(self) -> dict[str, Any]:
        server = dict(self.config.get("server") or {})
        server.setdefault("host", "0.0.0.0")
        server["port"] = int(server.get("port", 8000))
        return server

    def _serve_options(self) -> list[str]:
        """``rlhub serve`` options other than host and port."""
        server = self._server()
        argv = ["--mixture", mixture_file(self.config, self.out)]
        if server.get("workers"):
            argv += ["--workers", str(int(server["workers"]))]
        if server.get("ray"):
            argv += ["--ray", str(server["ray"])]
        if server.get("label_key_file"):
            argv += ["--label-key-file", str(server["label_key_file"])]
        return argv

    def _serve_argv(self) -> list[str]:
        server = self._server()
        return ["rlhub", "serve", "--host", str(server["host"]), "--port", str(server["port"]),
                *self._serve_options()]

    def _submit(self, plan: Plan, serve: list[str] | None) -> int:
        if serve is None:
            check_server(plan.server_url, self.config, sorted(self._domains()))
            return subprocess.call(plan.command)
        from rlhub.integrations.server.process import ServerProcess

        server = self._server()
        with ServerProcess(self._serve_options(), host=str(server["host"]), port=server["port"]):
            return subprocess.call(plan.command)


def check_server(url: str, config: dict[str, Any], domains: list[str]) -> None:
    """Refuse to submit against a server that cannot serve this job (see the module docstring)."""
    from rlhub.integrations.openrlhf.client import ServerMisconfigured, check_health

    try:
        check_health(url, schedules(config), timeout_s=10.0)
        with urllib.request.urlopen(url.rstrip("/") + "/v1/domains", timeout=10) as resp:
            served = {d["id"] for d in json.loads(resp.read())["domains"]}
    except (ServerMisconfigured, OSError, ValueError, KeyError) as exc:
        raise TrainerError(f"server.url {url}: {exc}; start `rlhub serve` there or drop "
                           "server.url to let rlhub train start one") from None
    missing = [d for d in domains if d not in served]
    if missing:
        raise TrainerError(f"server.url {url}: the server does not serve {len(missing)} domain(s) "
                           f"of the mixture ({', '.join(missing[:5])}); install their plugins "
                           "there (`rlhub pull` or pip) and restart it")
