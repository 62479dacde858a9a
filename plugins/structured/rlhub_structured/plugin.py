"""rlhub hook implementations for rlhub-structured: manifests and one named verifier.

Nothing heavy is imported here; jsonschema and yaml load only when a domain verifies.
"""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

# v2 of the JSON Schema, YAML and format domains: exact-only. Partial credit for a document that
# only validates, a bare pattern or a few right fields was collected by placeholder answers.
EXACT = {"kind": "exact"}
CSV_PARTIAL = {"kind": "partial", "measures": "the fraction of data rows fully right, paid only "
                                              "under the exact header the task asks for"}
LEVELS = {
    1: "a flat object of typed fields",
    2: "enums, numeric bounds, optional fields, no extra properties",
    3: "a nested object and a bounded array of strings",
    4: "a patterned field to invent, an array of objects, unique items, length bounds",
    5: "a oneOf contact, enums in array items, patterned array items",
}
FORMATS = {
    "date": "rewrite a spoken date as YYYY-MM-DD, DD/MM/YYYY, MM/DD/YYYY or DD.MM.YYYY",
    "timestamp": "rewrite a local time as an ISO 8601 timestamp, with its offset or in UTC",
    "phone": "rewrite a US phone number as E.164, (XXX) XXX-XXXX or XXX-XXX-XXXX",
    "semver": "bump or compose a semantic version (SemVer 2.0.0)",
    "identifier": "turn a phrase into a snake/camel/Pascal/kebab/SCREAMING identifier",
    "duration": "rewrite a spoken duration as an ISO 8601 duration",
}


def _components(weights: dict[str, float], notes: dict[str, str]) -> dict[str, Any]:
    return {"range": [0, 1], "components": {
        name: {"weight": w, "description": notes[name]} for name, w in weights.items()}}


# v3 of format-duration: its pattern (in every task) lost a look-ahead that the linear-time
# engine cannot run; it accepts the same answers.
MAJOR = {"format-duration": 3}


def _manifest(name: str, summary: str, tags: list[str], factory: str, params: dict[str, Any],
              reward: dict[str, Any], scoring: dict[str, str], **extra: Any) -> dict[str, Any]:
    major = MAJOR.get(name, 2 if scoring["kind"] == "exact" else 1)
    return {"id": f"structured/{name}-v{major}", "version": f"{major}.0.0", "summary": summary,
            "license": "Apache-2.0", "tags": ["structured-output", *tags], "size": None,
            "reward": reward, "scoring": scoring, "factory": f"rlhub_structured.{factory}",
            "params": params, "verify_timeout_s": 2, **extra}


SCHEMA_REWARD = _components({"valid_json": 0.0, "schema_ok": 0.0, "values": 0.0, "exact": 1.0}, {
    "valid_json": "the answer parses as JSON",
    "schema_ok": "it validates against the schema",
    "values": "fraction of the stated values found at their paths",
    "exact": "it validates and holds every stated value"})
DOCUMENT_NOTES = {"valid": "it parses to a mapping", "fields": "fraction of expected values right",
                  "exact": "every key, type and value right, nothing extra",
                  "header": "the header line is exact", "rows": "fraction of rows fully right",
                  "format": "the answer matches the format's pattern",
                  "correct": "the answer is the requested value"}
YAML_REWARD = _components({"valid": 0.0, "fields": 0.0, "exact": 1.0}, DOCUMENT_NOTES)
CSV_REWARD = _components({"header": 0.0, "rows": 0.4, "exact": 0.6}, DOCUMENT_NOTES)
FORMAT_REWARD = _components({"format": 0.0, "correct": 1.0}, DOCUMENT_NOTES)


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    manifests = [
        _manifest(f"json-schema-l{n}", f"JSON matching a generated JSON Schema, level {n}: {what}.",
                  ["json", "json-schema", f"level-{n}"], "schemas:make", {"level": n},
                  SCHEMA_REWARD, EXACT, verifier={"name": "json-schema-values", "options": {}})
        for n, what in LEVELS.items()
    ]
    manifests += [
        _manifest("yaml-config", "A flat YAML mapping of typed values, some needing quotes.",
                  ["yaml"], "documents:make_yaml", {"shape": "config"}, YAML_REWARD, EXACT),
        _manifest("yaml-nested", "A nested YAML document with lists of strings and of mappings.",
                  ["yaml"], "documents:make_yaml", {"shape": "nested"}, YAML_REWARD, EXACT),
        _manifest("csv-records", "Convert JSON records to CSV with an exact header and typed cells.",
                  ["csv"], "documents:make_csv", {"mode": "records"}, CSV_REWARD, CSV_PARTIAL),
        _manifest("csv-generate", "Invent N CSV rows obeying per-column type and range rules.",
                  ["csv"], "documents:make_csv", {"mode": "generate"}, CSV_REWARD, CSV_PARTIAL),
    ]
    manifests += [
        _manifest(f"format-{name}", what[0].upper() + what[1:] + ".", ["regex", "format"],
                  "formats:make", {"format": name}, FORMAT_REWARD, EXACT)
        for name, what in FORMATS.items()
    ]
    return manifests


@hookimpl
def rlhub_verifiers() -> dict[str, str]:
    return {"json-schema-values": "rlhub_structured.verifiers:JsonSchemaValues"}
