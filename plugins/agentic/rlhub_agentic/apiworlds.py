"""Seeded worlds and tasks for the API served by :mod:`rlhub_agentic.jobs.webapi`.

Each ``*_task`` function returns ``(world, question, expected answer, plan)``; ``plan`` is a list of
API calls that solves the task. Expected answers come from replaying the plan through the same job
code the sandbox runs, so an episode that makes the right calls sees exactly the expected answer.
"""

from __future__ import annotations

import random
from typing import Any

from rlhub_agentic import shopdb
from rlhub_agentic.answers import number_answer
from rlhub_agentic.calc import convert_value
from rlhub_agentic.jobs import webapi

Call = list[Any]


def _replay(app: str, world: dict[str, Any], plan: list[Call]) -> dict[str, Any]:
    history = [c for c in plan[:-1] if c[0] in webapi.MUTATING]
    return webapi.serve({"app": app, "world": world, "history": history, "call": plan[-1]})


def _unique_best(items: list[dict[str, Any]], key: str, lowest: bool) -> dict[str, Any] | None:
    ranked = sorted(items, key=lambda i: i[key], reverse=not lowest)
    if len(ranked) > 1 and ranked[0][key] == ranked[1][key]:
        return None
    return ranked[0] if ranked else None


def shop_world(rng: random.Random) -> dict[str, Any]:
    categories = rng.sample(shopdb.CATEGORIES, 4)
    names = rng.sample([f"{a} {b}" for a in shopdb.ADJECTIVES for b in shopdb.NOUNS], 22)
    items = [{"sku": f"SKU-{rng.randint(1000, 9999)}{i}", "name": name,
              "category": rng.choice(categories), "price": rng.randint(199, 19999) / 100,
              "stock": rng.randint(0, 40)} for i, name in enumerate(names)]
    return {"items": items, "secret": f"{rng.getrandbits(64):016x}", "page_size": 5}


def shop_task(rng: random.Random) -> tuple[dict[str, Any], str, dict[str, Any], list[Call]]:
    """Buy the cheapest in-stock item of one category and the best-stocked of another."""
    for _ in range(100):
        world = shop_world(rng)
        cat_a, cat_b = rng.sample(sorted({i["category"] for i in world["items"]}), 2)
        qty_a, qty_b = rng.randint(1, 3), rng.randint(2, 4)
        cheap = _unique_best([i for i in world["items"] if i["category"] == cat_a
                              and i["stock"] >= qty_a], "price", lowest=True)
        stocked = _unique_best([i for i in world["items"] if i["category"] == cat_b], "stock",
                               lowest=False)
        if cheap and stocked and stocked["stock"] >= qty_b:
            break
    else:
        raise RuntimeError("no shop world with an unambiguous order found in 100 draws")
    plan = [["POST", "/cart", {"sku": cheap["sku"], "qty": qty_a}],
            ["POST", "/cart", {"sku": stocked["sku"], "qty": qty_b}], ["POST", "/checkout", None]]
    order = _replay("shop", world, plan)["body"]["order_id"]
    question = (f"Using the shop API, buy {qty_a} unit(s) of the cheapest item in the category "
                f"'{cat_a}' that has at least {qty_a} in stock, and {qty_b} units of the item with "
                f"the most stock in the category '{cat_b}', in a single order. Check out and "
                "report the order id.")
    return world, question, {"type": "text", "value": order}, plan


def kv_task(rng: random.Random) -> tuple[dict[str, Any], str, dict[str, Any], list[Call]]:
    """Follow a chain of keys from ``start``; one link is locked behind a PIN."""
    def key() -> str:
        return f"k-{rng.getrandbits(24):06x}"

    length, secret = rng.randint(4, 6), rng.randint(100, 999)
    chain = [key() for _ in range(length)]
    store: dict[str, Any] = {"start": f"next: {chain[0]}"}
    for here, there in zip(chain, chain[1:]):
        store[here] = f"next: {there}"
    store[chain[-1]] = f"treasure: {secret}"
    locked = rng.randrange(1, length - 1)
    pin_key, unlock_key = f"pin-{rng.getrandbits(16):04x}", f"unlock-{chain[locked]}"
    store[pin_key] = str(rng.randint(1000, 9999))
    store[chain[locked]] = {"locked_by": pin_key, "unlock": unlock_key,
                            "then": store[chain[locked]]}
    for _ in range(25):
        store.setdefault(key(), f"next: {key()}" if rng.random() < 0.7 else "dead end")
    plan = [["GET", f"/keys/{k}", None] for k in ["start", *chain[:locked]]]
    plan += [["GET", f"/keys/{pin_key}", None],
             ["PUT", f"/keys/{unlock_key}", {"value": store[pin_key]}],
             *[["GET", f"/keys/{k}", None] for k in chain[locked:]]]
    found = _replay("kv", {"store": store}, plan)["body"]["value"]
    if found != f"treasure: {secret}":
        raise RuntimeError(f"kv chain replay ended at {found!r}, expected the treasure")
    question = ("The key-value API holds a chain of keys. Read the key 'start': its value names "
                "the next key to read ('next: KEY'). Follow the chain until a value reads "
                "'treasure: NUMBER' and report that number. Locked keys tell you how to unlock "
                "them.")
    return {"store": store}, question, number_answer(float(secret)), plan


DESTINATIONS = ["Oslo", "Lima", "Accra", "Perth", "Quito", "Hanoi"]
WEIGHT_UNITS = ["lb", "oz", "kg", "g"]


def shipments_task(rng: random.Random) -> tuple[dict[str, Any], str, dict[str, Any], list[Call]]:
    """Total the weight, in kilograms, of the shipments to one destination (mixed units)."""
    destinations = rng.sample(DESTINATIONS, 3)
    rows = []
    for i in range(rng.randint(10, 16)):
        unit = rng.choice(WEIGHT_UNITS)
        scale = {"lb": (1, 90), "oz": (4, 400), "kg": (1, 40), "g": (200, 9000)}[unit]
        rows.append({"id": f"SH-{100 + i}", "destination": rng.choice(destinations),
                     "weight": round(rng.uniform(*scale), 1), "unit": unit})
    target = rng.choice(sorted({r["destination"] for r in rows}))
    mine = [r for r in rows if r["destination"] == target]
    total = sum(convert_value(r["weight"], r["unit"], "kg") for r in mine)
    pages = -(-len(mine) // 4)
    plan = [["GET", f"/shipments?destination={target}&page={p}", None]
            for p in range(1, pages + 1)]
    question = (f"What is the total weight, in kilograms, of all shipments to {target}? The "
                "shipments API gives each weight in its own unit. Round to 2 decimal places.")
    return ({"shipments": rows, "page_size": 4}, question, number_answer(total, 2), plan)


TASKS = {"shop": shop_task, "kv": kv_task, "shipments": shipments_task}

API_DOCS = {
    "shop": ("GET /items?category=C&page=N (5 items per page; each has sku, name, category, "
             "price, stock), GET /items/SKU, GET /cart, POST /cart {\"sku\": \"SKU-...\", "
             "\"qty\": N}, DELETE /cart/SKU, POST /checkout (returns the order_id)"),
    "kv": "GET /keys/KEY, GET /keys?prefix=P (lists up to 10 keys), PUT /keys/KEY {\"value\": V}",
    "shipments": "GET /shipments?destination=D&page=N (4 per page), GET /shipments/ID",
}
