#!/usr/bin/env python3
"""The per-request retry baseline of scripts/bench-outages: an outbox uploader built on urllib3's
`Retry`, the way a service without an error bus would be written.

  retry_uploader.py BASE_URL CLIENT_SECRET OUTBOX [CONCURRENCY]

Watches OUTBOX (listed every 100 ms) and uploads each file with CONCURRENCY threads (errorbusd's
default `sync.concurrency`, 16): `PUT /v1/items/{key}` with `Idempotency-Key: {key}`, key = hex
SHA-256 of the content (as errorbusd's OutboxInspector), `Authorization: Bearer` with a token from
`POST /oauth/token` (client credentials, client id `errorbus`). The file is deleted once the API
answered 200/201 with the file's SHA-256. Runs until SIGTERM or SIGINT.

Retries, per request, by urllib3 (`Retry`): up to 10, on connection errors and on 429 and 5xx
(`status_forcelist`), for GET, PUT and POST (`allowed_methods`), honouring `Retry-After`
(`respect_retry_after_header`), otherwise exponential back-off with jitter: urllib3 waits 0 before
the first retry, then backoff_factor × 2^(n-1) + uniform(0, backoff_jitter), at most backoff_max.
With backoff_factor 0.5 the bounds are 1 s, 2 s, 4 s, … as errorbusd's `bus.backoff` defaults
(base 1 s, factor 2), capped at its 2 s (`backoff_max`); urllib3 has no full jitter, so
`backoff_jitter` 1.0 adds up to a second to each. Redirects are not followed (a `PUT` answered by a
captive portal's 302 must not end on its login page). A 401 fetches a new token (once for all
threads that used the refused one) and sends the request again at once. Whatever is still not
delivered after that (retries exhausted, a redirect, an unexpected answer) is tried again by the
worker after its own full-jitter back-off with the same base and cap.

Needs urllib3 2.x: `python3 -m pip install urllib3`.
"""
import base64, hashlib, json, os, queue, random, signal, sys, threading, time

try:
    import urllib3
    from urllib3.util.retry import Retry
except ImportError:
    sys.exit("retry_uploader: urllib3 is missing; install it with: python3 -m pip install urllib3")

BACKOFF_BASE, BACKOFF_CAP = 1.0, 2.0  # errorbusd's bus.backoff.base and bus.backoff.cap defaults
CLIENT_ID = "errorbus"


def retry():
    return Retry(
        total=10,
        backoff_factor=BACKOFF_BASE / 2,
        backoff_max=BACKOFF_CAP,
        backoff_jitter=1.0,
        respect_retry_after_header=True,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET", "PUT", "POST"}),
        redirect=False,
        raise_on_status=False,
    )


class NotDelivered(Exception):
    pass


class Tokens:
    """The bearer token shared by the workers; a refused token is replaced once."""

    def __init__(self, http, base_url, secret):
        self.http, self.url = http, base_url + "/oauth/token"
        self.basic = "Basic " + base64.b64encode(("%s:%s" % (CLIENT_ID, secret)).encode()).decode()
        self.lock = threading.Lock()
        self.token = None

    def current(self):
        with self.lock:
            if self.token is None:
                self.token = self._fetch()
            return self.token

    def refused(self, token):
        with self.lock:
            if self.token == token:
                self.token = None

    def _fetch(self):
        try:
            response = self.http.request("POST", self.url, body="grant_type=client_credentials", retries=retry(),
                                         headers={"Authorization": self.basic, "Content-Type": "application/x-www-form-urlencoded"})
        except urllib3.exceptions.HTTPError as error:
            raise NotDelivered("token: %s" % error)
        if response.status != 200:
            raise NotDelivered("token: HTTP %d" % response.status)
        try:
            return json.loads(response.data)["access_token"]
        except (ValueError, KeyError):
            raise NotDelivered("token: not a token answer")


def upload(http, tokens, base_url, path):
    data = open(path, "rb").read()
    key = hashlib.sha256(data).hexdigest()
    for _ in range(3):  # a refused token, then the new one
        token = tokens.current()
        try:
            response = http.request("PUT", "%s/v1/items/%s" % (base_url, key), body=data, retries=retry(), headers={
                "Authorization": "Bearer " + token, "Idempotency-Key": key, "Content-Type": "application/octet-stream"})
        except urllib3.exceptions.HTTPError as error:
            raise NotDelivered(str(error))
        if response.status == 401:
            tokens.refused(token)
            continue
        if response.status in (200, 201):
            try:
                if json.loads(response.data).get("sha256") == key:
                    return
            except ValueError:
                pass
            raise NotDelivered("HTTP %d without the item's digest" % response.status)
        raise NotDelivered("HTTP %d" % response.status)
    raise NotDelivered("the new token was refused too")


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    base_url, secret, outbox = sys.argv[1:4]
    concurrency = int(sys.argv[4]) if len(sys.argv) == 5 else 16
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    http = urllib3.PoolManager(maxsize=concurrency, block=True, timeout=urllib3.Timeout(connect=10, read=30))
    tokens = Tokens(http, base_url, secret)
    work, taken, taken_lock = queue.Queue(), set(), threading.Lock()

    def worker():
        while not stopping.is_set():
            try:
                name = work.get(timeout=0.1)
            except queue.Empty:
                continue
            path = os.path.join(outbox, name)
            failures = 0
            while not stopping.is_set():
                try:
                    upload(http, tokens, base_url, path)
                    os.remove(path)
                    break
                except FileNotFoundError:
                    break  # listed again just before its upload removed it
                except NotDelivered:
                    failures += 1
                    stopping.wait(random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1))))
            with taken_lock:
                taken.discard(name)

    for _ in range(concurrency):
        threading.Thread(target=worker, daemon=True).start()
    while not stopping.is_set():
        for name in sorted(os.listdir(outbox)):
            if name.startswith("."):
                continue
            with taken_lock:
                if name in taken:
                    continue
                taken.add(name)
            work.put(name)
        stopping.wait(0.1)


if __name__ == "__main__":
    main()
