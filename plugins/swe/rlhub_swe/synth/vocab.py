"""The kinds of synthetic package: each a vocabulary its modules, functions and values draw from.

A kind names the package, its modules (what a maintainer would call them), the verbs and nouns
its function names are made of, and the words its text inputs are made of. The code the
templates build is the same for every kind; the vocabulary is what makes an inventory service
read like one, and a model trained on them see many names for the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One kind of package: names for its package, modules, functions, parameters and text."""

    name: str
    package: str
    summary: str
    modules: tuple[str, ...]
    verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    int_params: tuple[str, ...]
    str_params: tuple[str, ...]
    list_params: tuple[str, ...]
    words: tuple[str, ...]


KINDS = {
    kind.name: kind for kind in (
        Kind("inventory", "stockroom", "an inventory service: stock levels, pricing, orders",
             ("stock", "pricing", "orders", "catalog", "warehouse", "audit", "restock",
              "shipping", "returns", "suppliers", "reports", "bins", "lots", "quotes"),
             ("adjust", "price", "reserve", "audit", "score", "restock", "ship", "count",
              "rank", "quote", "tally", "settle", "check", "plan"),
             ("qty", "sku", "order", "lot", "bin", "stock", "batch", "item", "crate", "pallet",
              "unit", "shelf"),
             ("qty", "count", "units", "level", "cost"), ("sku", "label", "code", "name"),
             ("quantities", "levels", "costs"),
             ("widget", "bolt", "crate", "shelf", "north", "south", "blue", "steel", "kit",
              "spare", "rush", "bulk")),
        Kind("textpipe", "wordmill", "a text pipeline: cleaning, tokens, scoring",
             ("clean", "tokens", "stems", "scoring", "filters", "normalize", "spans", "lines",
              "stats", "render", "lexicon", "chunks", "merge", "index"),
             ("clean", "split", "stem", "score", "weigh", "trim", "join", "count", "mark",
              "fold", "match", "pick", "pad", "rank"),
             ("text", "token", "word", "line", "span", "stem", "term", "phrase", "chunk",
              "entry", "tag", "gram"),
             ("width", "size", "limit", "score", "offset"), ("text", "line", "word", "phrase"),
             ("scores", "widths", "offsets"),
             ("alpha", "Beta", "the", "quick", "river", "stone", "echo", "delta", "Lorem",
              "ipsum", "night", "owl")),
        Kind("config", "confload", "a config loader: keys, sections, overrides, coercion",
             ("keys", "sections", "overrides", "coerce", "defaults", "paths", "flags", "env",
              "schema", "merge", "layers", "profiles", "secrets", "limits"),
             ("parse", "resolve", "merge", "lookup", "coerce", "expand", "mask", "check",
              "scope", "bound", "shift", "pick", "load", "fold"),
             ("key", "value", "section", "path", "flag", "option", "layer", "profile", "field",
              "entry", "limit", "port"),
             ("port", "depth", "retries", "limit", "timeout"), ("key", "path", "name", "raw"),
             ("ports", "limits", "timeouts"),
             ("Debug", "host", "PATH", "user", "mode", "cache", "Level", "root", "proxy",
              "token", "zone", "tier")),
        Kind("ledger", "bookkeep", "a ledger: postings, balances, fees and rounding",
             ("postings", "balances", "fees", "rounding", "accounts", "journal", "taxes",
              "rates", "periods", "statements", "limits", "transfers", "reconcile", "budget"),
             ("post", "balance", "round", "charge", "tax", "credit", "debit", "net", "split",
              "accrue", "close", "audit", "cap", "carry"),
             ("amount", "entry", "account", "total", "rate", "fee", "period", "balance", "memo",
              "ledger", "credit", "debit"),
             ("amount", "cents", "rate", "days", "fee"), ("memo", "account", "payee", "ref"),
             ("amounts", "fees", "rates"),
             ("Rent", "payroll", "INV", "refund", "card", "cash", "ACME", "vendor", "loan",
              "bonus", "fuel", "office")),
        Kind("grid", "tilemap", "a tile-grid engine: coordinates, moves, regions",
             ("coords", "moves", "regions", "paths", "tiles", "bounds", "layers", "scan",
              "spawn", "fog", "terrain", "units", "camera", "score"),
             ("shift", "clamp", "wrap", "scale", "step", "snap", "flip", "probe", "trace",
              "fill", "spread", "bound", "turn", "mark"),
             ("x", "tile", "cell", "row", "col", "span", "zone", "step", "edge", "mark", "patch",
              "cursor"),
             ("x", "y", "dx", "steps", "radius"), ("tile", "glyph", "terrain", "code"),
             ("xs", "rows", "steps"),
             ("grass", "Rock", "water", "sand", "TREE", "wall", "lava", "ice", "road", "mud",
              "gate", "fog")),
    )
}
