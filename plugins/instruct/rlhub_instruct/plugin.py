"""rlhub hook implementations for rlhub-instruct: manifests only, nothing heavy imported."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

# v2: every task carries a content requirement that gates every format instruction (v1 paid full
# reward to a one-word answer on a quarter of the families).
# v3: the gate also asks for prose (no numbered filler or identifiers, English function words, not
# the prompt's words shuffled): the topic word plus numbered tokens earned 1.0 on four families.
VERSION = "3.0.0"
# Families whose instructions any English-looking text can meet: word salad (function words
# alternating with everyday words the prompt does not use) passes their prose gate and earns
# reward, and only a fluency judge could tell it from prose. Marked, so `rlhub check` and pulls
# report them (the contract kit's template class finds it; issue 22's note).
SALAD_PAYS = frozenset({"combo2", "ends-with", "lowercase", "no-commas", "paragraphs",
                        "sentence-count", "word-count"})

# (domain name, constraint kinds, what the response must do)
FAMILIES: tuple[tuple[str, list[str], str], ...] = (
    ("word-count", ["word_count"], "stay above or below a word count"),
    ("sentence-count", ["sentence_count"], "stay above or below a sentence count"),
    ("char-count", ["char_count"], "stay above or below a character count"),
    ("keywords-include", ["keywords_include"], "use required keywords at least twice each"),
    ("keywords-exclude", ["keywords_exclude"], "avoid forbidden words taken from the request"),
    ("keyword-frequency", ["keyword_frequency"], "use a keyword at least or exactly N times"),
    ("uppercase", ["uppercase"], "write in all capital letters"),
    ("lowercase", ["lowercase"], "write in all lowercase letters"),
    ("paragraphs", ["paragraphs"], "use exactly N paragraphs split by blank lines or ***"),
    ("sections", ["sections"], "use exactly N markdown sections"),
    ("bullets", ["bullets"], "use exactly N markdown bullet points"),
    ("starts-with", ["starts_with"], "start with an exact phrase"),
    ("ends-with", ["ends_with"], "end with an exact phrase"),
    ("json-wrap", ["json_wrap"], "wrap the whole output in one JSON object"),
    ("placeholders", ["placeholders"], "include N [square bracket] placeholders"),
    ("title", ["title"], "include a <<title>> line"),
    ("postscript", ["postscript"], "end with a P.S. postscript line"),
    ("no-commas", ["no_commas"], "use no commas at all"),
    ("quotation", ["quotation"], "wrap the whole response in double quotes"),
    ("repeat-request", ["repeat_request"], "repeat the request verbatim before answering"),
    ("highlights", ["highlights"], "highlight N *spans* with markdown"),
)

# Single-family tasks hold three constraints (topic, content and the family), so the fraction is
# logged only; combination tasks give partial credit for each instruction followed, once the
# response meets the content gate (topic and content).
SINGLE_SCORING = {"kind": "exact"}
COMBO_SCORING = {"kind": "partial", "measures": "the fraction of the task's instructions "
                 "followed, paid only once the response is on the topic and meets the content "
                 "floor"}
SINGLE_WEIGHTS = {"constraints": 0.0, "all_ok": 1.0}
COMBO_WEIGHTS = {"constraints": 0.3, "all_ok": 0.7}


def _reward(weights: dict[str, float]) -> dict[str, Any]:
    return {"range": [0, 1], "components": {
        "constraints": {"weight": weights["constraints"],
                        "description": "fraction of the task's instructions followed"},
        "all_ok": {"weight": weights["all_ok"], "description": "1 when every instruction is followed"},
        "content": {"weight": 0.0, "description": "1 when the response meets the content gate"},
    }}


def _manifest(name: str, summary: str, tags: list[str], params: dict[str, Any],
              weights: dict[str, float], scoring: dict[str, str]) -> dict[str, Any]:
    return {
        "id": f"instruct/{name}-v{VERSION.split('.')[0]}",
        "version": VERSION,
        "summary": summary,
        "license": "Apache-2.0",
        "tags": ["instruction-following", "ifeval", *tags],
        "size": None,
        "reward": _reward(weights),
        "scoring": scoring,
        "factory": "rlhub_instruct.domain:make",
        "params": params,
        "verify_timeout_s": 2,
        **({"hackable": ["template"]} if name in SALAD_PAYS else {}),
    }


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    manifests = [
        _manifest(name, f"Write to a generated request and {what}.", ["single"],
                  {"kinds": kinds}, SINGLE_WEIGHTS, SINGLE_SCORING)
        for name, kinds, what in FAMILIES
    ]
    for n in (2, 3):
        manifests.append(_manifest(
            f"combo{n}", f"Write to a generated request while following {n} compatible "
            "instruction families at once.", ["combination"], {"combine": n}, COMBO_WEIGHTS,
            COMBO_SCORING))
    return manifests
