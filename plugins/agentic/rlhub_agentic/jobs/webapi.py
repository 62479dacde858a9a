"""Sandbox job: a tiny stateful JSON API, replayed from the episode's earlier calls.

Request (stdin JSON): ``{"app": "shop|kv|shipments", "world": {...}, "history": [call, ...],
"call": call}`` where a call is ``[method, path, body]``. The app's state starts from ``world``;
every call of ``history`` is applied again in order (so the job itself keeps no state between
turns), then ``call`` runs and its response is the reply: ``{"rlhub_job": {"status": 200,
"body": ...}}``. Everything is deterministic in the request.

Apps:

* ``shop``: ``GET /items[?category=C&page=N]``, ``GET /items/SKU``, ``GET /cart``,
  ``POST /cart {"sku": S, "qty": Q}``, ``DELETE /cart/SKU``, ``POST /checkout``. A checkout's
  ``order_id`` is a digest of the task secret and the cart, so only the right cart yields it.
* ``kv``: ``GET /keys/K``, ``GET /keys?prefix=P``, ``PUT /keys/K {"value": V}``. A value
  ``{"locked_by": PIN_KEY, "unlock": U, "then": V}`` reads as locked until key ``U`` holds the
  value stored under ``PIN_KEY``; then it reads as ``V``.
* ``shipments``: ``GET /shipments[?destination=D&page=N]``, ``GET /shipments/ID``.
"""

import hashlib
import json
import sys
from urllib.parse import parse_qs, urlsplit

MUTATING = ("POST", "PUT", "DELETE")


def reply(status, body):
    return {"status": status, "body": body}


def _page(rows, query, size):
    try:
        page = int(query.get("page", ["1"])[0])
    except ValueError:
        return reply(400, {"error": "page must be an integer"})
    pages = max(1, -(-len(rows) // size))
    if not 1 <= page <= pages:
        return reply(404, {"error": f"page {page} does not exist; pages run from 1 to {pages}"})
    results = rows[(page - 1) * size:page * size]
    return reply(200, {"page": page, "pages": pages, "results": results})


def order_id(secret, cart):
    canonical = json.dumps(sorted([sku, qty] for sku, qty in cart.items()))
    return "ORD-" + hashlib.sha256((secret + canonical).encode()).hexdigest()[:8].upper()


class Shop:
    """Items with stock, a cart and checkout."""

    def __init__(self, world):
        self.items = {item["sku"]: dict(item) for item in world["items"]}
        self.secret = world["secret"]
        self.page_size = world.get("page_size", 5)
        self.cart = {}

    def handle(self, method, parts, query, body):
        if parts[:1] == ["items"] and method == "GET":
            if len(parts) == 2:
                item = self.items.get(parts[1])
                return reply(200, item) if item else reply(404, {"error": f"no item {parts[1]}"})
            rows = [i for i in self.items.values()
                    if "category" not in query or i["category"] == query["category"][0]]
            return _page(rows, query, self.page_size)
        if parts == ["cart"] and method == "GET":
            return reply(200, self._cart_view())
        if parts == ["cart"] and method == "POST":
            return self._add(body)
        if parts[:1] == ["cart"] and len(parts) == 2 and method == "DELETE":
            if self.cart.pop(parts[1], None) is None:
                return reply(404, {"error": f"{parts[1]} is not in the cart"})
            return reply(200, self._cart_view())
        if parts == ["checkout"] and method == "POST":
            return self._checkout()
        return None

    def _cart_view(self):
        lines = [{"sku": s, "qty": q, "price": self.items[s]["price"]}
                 for s, q in self.cart.items()]
        total = round(sum(line["qty"] * line["price"] for line in lines), 2)
        return {"lines": lines, "total": total}

    def _add(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("sku"), str):
            return reply(400, {"error": 'expected a body {"sku": "...", "qty": N}'})
        sku, qty = body["sku"], body.get("qty", 1)
        if not isinstance(qty, int) or isinstance(qty, bool) or qty < 1:
            return reply(400, {"error": "qty must be a positive integer"})
        if sku not in self.items:
            return reply(404, {"error": f"no item {sku}"})
        if self.cart.get(sku, 0) + qty > self.items[sku]["stock"]:
            return reply(409, {"error": f"only {self.items[sku]['stock']} of {sku} in stock"})
        self.cart[sku] = self.cart.get(sku, 0) + qty
        return reply(200, self._cart_view())

    def _checkout(self):
        if not self.cart:
            return reply(400, {"error": "the cart is empty"})
        view = self._cart_view()
        oid = order_id(self.secret, self.cart)
        for sku, qty in self.cart.items():
            self.items[sku]["stock"] -= qty
        self.cart = {}
        return reply(200, {"order_id": oid, "total": view["total"]})


class Kv:
    """A key-value store with lockable values."""

    def __init__(self, world):
        self.store = dict(world["store"])

    def read(self, key):
        value = self.store[key]
        if isinstance(value, dict) and "locked_by" in value:
            if str(self.store.get(value["unlock"])) == str(self.store.get(value["locked_by"])):
                return value["then"]
            return (f"locked: PUT the value stored under key '{value['locked_by']}' into key "
                    f"'{value['unlock']}', then read this key again")
        return value

    def handle(self, method, parts, query, body):
        if parts == ["keys"] and method == "GET":
            prefix = query.get("prefix", [""])[0]
            keys = sorted(k for k in self.store if k.startswith(prefix))
            return reply(200, {"keys": keys[:10], "matching": len(keys)})
        if parts[:1] == ["keys"] and len(parts) == 2:
            key = parts[1]
            if method == "GET":
                if key not in self.store:
                    return reply(404, {"error": f"no key {key}"})
                return reply(200, {"key": key, "value": self.read(key)})
            if method == "PUT":
                if not isinstance(body, dict) or "value" not in body:
                    return reply(400, {"error": 'expected a body {"value": ...}'})
                self.store[key] = body["value"]
                return reply(200, {"key": key, "stored": True})
        return None


class Shipments:
    """A read-only, paginated list of shipments."""

    def __init__(self, world):
        self.rows = world["shipments"]
        self.page_size = world.get("page_size", 4)

    def handle(self, method, parts, query, body):
        if method != "GET" or parts[:1] != ["shipments"]:
            return None
        if len(parts) == 2:
            row = next((r for r in self.rows if r["id"] == parts[1]), None)
            return reply(200, row) if row else reply(404, {"error": f"no shipment {parts[1]}"})
        rows = [r for r in self.rows
                if "destination" not in query or r["destination"] == query["destination"][0]]
        return _page(rows, query, self.page_size)


APPS = {"shop": Shop, "kv": Kv, "shipments": Shipments}


def dispatch(app, call):
    method, target, body = call
    split = urlsplit(target)
    parts = [p for p in split.path.split("/") if p]
    response = app.handle(method.upper(), parts, parse_qs(split.query), body)
    if response is None:
        return reply(404, {"error": f"no route {method.upper()} {split.path}"})
    return response


def serve(request):
    """Replay ``history`` on a fresh app, then answer ``call``."""
    app = APPS[request["app"]](request["world"])
    for call in request.get("history", []):
        dispatch(app, call)
    return dispatch(app, request["call"])


def main():
    request = json.loads(sys.stdin.read())
    try:
        response = serve(request)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as data
        response = reply(500, {"error": f"{type(exc).__name__}: {exc}"})
    sys.stdout.write("\n" + json.dumps({"rlhub_job": response}) + "\n")


if __name__ == "__main__":
    main()
