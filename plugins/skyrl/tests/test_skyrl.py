"""The skyrl verifier over a data-only domain of SkyRL rows, and the environments left out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rlhub.testing import assert_domain_ok
from rlhub_skyrl import catalog
from rlhub_skyrl.verifier import SkyRLVerifier

ROWS = [  # SkyRL's gsm8k rows: the question, and the final number as the ground truth
    {"question": "Ann has 3 apples and buys 4 more. How many apples does she have? "
                 "End with '#### ANSWER'.", "answer": "7"},
    {"question": "A train travels 60 km each hour for 3 hours. How far does it go? "
                 "End with '#### ANSWER'.", "answer": "180"},
    {"question": "Tom had 20 marbles and gave away 8. How many are left? "
                 "End with '#### ANSWER'.", "answer": "12"},
    {"question": "There are 5 boxes of 6 eggs. How many eggs? End with '#### ANSWER'.",
     "answer": "30"},
]
DOMAIN_FILE = """\
id: mygsm/skyrl-gsm8k-v1
version: "1.0.0"
summary: Grade-school arithmetic scored by SkyRL-gym's gsm8k environment.
license: MIT
tags: [math, skyrl]
dataset: rows.jsonl
fields: {prompt: question, answer: answer, gold: gold}
verifier: {name: skyrl, options: {env: gsm8k}}
reward:
  range: [0, 1]
  components:
    correct: {weight: 1.0}
    env_reward: {weight: 0.0, range: [-1, 1]}
"""


@pytest.fixture
def gsm_domain(tmp_path, rlhub_registry):
    rows = [{**row, "gold": f"Adding up... #### {row['answer']}"} for row in ROWS]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "gsm.yaml").write_text(DOMAIN_FILE)
    import rlhub_skyrl.plugin

    reg = rlhub_registry(plugins=[rlhub_skyrl.plugin], domain_files=[tmp_path / "gsm.yaml"])
    return reg.get("mygsm/skyrl-gsm8k-v1")


def test_a_data_only_domain_over_skyrl_rows_meets_the_contract(gsm_domain):
    assert_domain_ok(gsm_domain, across_processes=False)


def test_the_verifier_pays_what_skyrl_gyms_own_scorer_pays_for_one_final_answer(gsm_domain):
    from skyrl_gym.envs.gsm8k.utils import compute_score

    task = gsm_domain.task("train", 0, 0)
    for completion in ["#### 7", "so #### 7.", "7", "#### 8", "#### 7,000", "", "#### -7"]:
        score = gsm_domain.verify(task, completion)
        assert score.components["env_reward"] == compute_score(completion, task.answer)
        assert score.reward == float(compute_score(completion, task.answer) >= 1)


@pytest.mark.parametrize("hedge", ["#### 7 or 12", "#### 7Yes", "#### 7\n#### 12",
                                   "#### 7, 8, 9"])
def test_a_hedged_final_answer_that_skyrl_would_pay_earns_nothing(gsm_domain, hedge):
    from skyrl_gym.envs.gsm8k.utils import compute_score

    task = gsm_domain.task("train", 0, 0)
    assert compute_score(hedge, task.answer) == 1.0  # SkyRL's own scorer takes the first number
    score = gsm_domain.verify(task, hedge)
    assert (score.reward, score.passed, score.components["env_reward"]) == (0.0, False, 1.0)
    assert score.feedback.startswith("Give one final answer")


def test_skyrls_full_reward_for_another_number_is_not_a_pass(gsm_domain):
    from skyrl_gym.envs.gsm8k.utils import compute_score

    task = next(t for t in gsm_domain.sample(8) if len(str(t.answer)) >= 2)
    split = f"{str(task.answer)[0]},{str(task.answer)[1:]}"  # 21 as "2,1": two numbers
    assert compute_score(f"#### {split}", task.answer) == 1.0  # SkyRL drops the comma
    score = gsm_domain.verify(task, f"#### {split}")
    assert (score.reward, score.passed, score.components["env_reward"]) == (0.0, False, 1.0)


def test_an_unbridged_environment_is_refused_naming_the_bridged_ones():
    with pytest.raises(Exception, match=r"expected options.env in \['aime', 'gsm8k'\], "
                                        r"found 'lcb'"):
        SkyRLVerifier({"env": "lcb"})


def test_every_environment_skyrl_gym_registers_is_bridged_or_left_out_with_a_reason():
    import skyrl_gym

    assert sorted(skyrl_gym.registry) == sorted([*catalog.BRIDGED, *catalog.LEFT_OUT])


def test_rlhub_list_all_shows_why_no_skyrl_environment_is_a_listed_domain():
    out = subprocess.run([sys.executable, "-m", "rlhub", "list", "--all", "--json", "--plugin",
                          "skyrl"], capture_output=True, text=True, check=True)
    rows = {r["id"]: r["left_out"] for r in json.loads(out.stdout)}
    assert "outside any sandbox" in rows["skyrl/lcb-v1"]
    assert "verifier: {name: skyrl, options: {env: gsm8k}}" in rows["skyrl/gsm8k-v1"]
    assert len(rows) == len(catalog.BRIDGED) + len(catalog.LEFT_OUT)


def test_the_table_describes_the_installed_skyrl_gym():
    from importlib import metadata

    assert metadata.version(catalog.PACKAGE) == catalog.VERSION
