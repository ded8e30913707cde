#!/usr/bin/env python3
"""An S3 endpoint on loopback that really checks AWS Signature Version 4: moto's server with
authentication on, for the tests of errorbusd's S3 signing.

  moto_s3.py --port P --bucket NAME [--region us-east-1] [--timeout 30] [--log FILE]

Starts moto's server (`moto.server.main(["-H", "127.0.0.1", "-p", P])`) in a child process
(this file with `--serve-moto P`, see serve_moto for the one thing it changes), waits until it answers,
creates an IAM user with an access key and an inline policy allowing `s3:*` on every resource,
and the bucket, then prints one JSON line on stdout

  {"endpoint": "http://127.0.0.1:P", "region": ..., "bucket": ..., "accessKeyId": ...,
   "secretAccessKey": ..., "serverPid": ...}

and runs until SIGTERM or SIGINT, when it stops moto (SIGTERM, then SIGKILL after 5 s) and exits
0. It exits 1 with a message on stderr if moto cannot start (port taken, moto missing), does not
answer in --timeout seconds, or dies; the child also gets SIGTERM if this process dies (Linux
PR_SET_PDEATHSIG). `--port 0` picks a free port. moto's own output (a line per
request) goes to --log, or is dropped (its tail is shown if start-up fails).

How authentication is turned on: moto checks a request's signature and the IAM policies of its
access key once the process has served INITIAL_NO_AUTH_ACTION_COUNT requests of AWS services
(the environment variable; unset means never). The child is started with
INITIAL_NO_AUTH_ACTION_COUNT=4, the four set-up requests (CreateUser, CreateAccessKey,
PutUserPolicy, CreateBucket); afterwards `POST /moto-api/reset-auth` with body `0` (moto's own
switch, which also zeroes its request counter; the body must not be sent as a form) makes every
later request checked whatever the count was. Before printing, the fixture checks that a request signed with a wrong secret is
refused with SignatureDoesNotMatch and that one signed with the printed secret is accepted.

As a library:

  with MotoS3(bucket="errorbus-test") as s3:   # port=0 (free), region="us-east-1"
      s3.info["endpoint"], s3.info["accessKeyId"], ...
      s3.client()                       # a boto3 S3 client with the right credentials

Needs moto with its server extras and boto3: `python3 -m pip install 'moto[server]' boto3`.
"""
import argparse, json, os, signal, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request

SETUP_REQUESTS = 4  # CreateUser, CreateAccessKey, PutUserPolicy, CreateBucket
USER = "errorbus-test"
POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}


class FixtureError(Exception):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    """In the child: receive SIGTERM if the fixture dies (Linux), so moto is never left behind."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def canonical_target(raw_target):
    """SigV4's canonical URI and query string for S3 of a request target as received (RAW_URI):
    each path segment and each query name and value percent-decoded, then encoded again (RFC 3986
    unreserved characters and, in the path, "/" kept; uppercase hex), pairs sorted. For a client
    that encodes as SigV4 requires this is the target as sent."""
    from urllib.parse import quote, unquote_to_bytes, urlsplit
    if not raw_target.startswith("/"):
        parts = urlsplit(raw_target)  # absolute form
        raw_target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    raw_path, _, raw_query = raw_target.partition("?")
    enc = lambda text, safe: quote(unquote_to_bytes(text.encode("latin-1")), safe=safe)
    pairs = sorted((enc(k, ""), enc(v, "")) for k, _, v in
                   (item.partition("=") for item in raw_query.split("&") if item))
    return enc(raw_path, "/") + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")


def serve_moto(port, uri_fix):
    """The child: moto's server on 127.0.0.1:port (settings come from the environment).

    With uri_fix, moto checks signatures against the request target as the client sent it. moto
    5.2.1 on its own signs werkzeug's `request.url` again, an IRI in which werkzeug has decoded
    some escapes (%2F, %3A, %C3%BC, ...) and left others, so a correctly signed request for a key
    such as `a+b`, `ü` or `a=b`, or a query such as `prefix=a%2F`, is refused with
    SignatureDoesNotMatch (boto3's too). Only the URL moto's authenticator reads is replaced;
    routing, the signature computation (botocore's S3SigV4Auth) and the policy check are moto's.
    Also, an S3 request without an Authorization header gets 403 AccessDenied, not moto's 500."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import S3IAMRequest
    from moto.s3.exceptions import S3AccessDeniedError
    if uri_fix:
        original = ActionAuthenticatorMixin._authenticate_and_authorize_action

        def _authenticate_and_authorize_action(self, iam_request_cls, *args, **kwargs):
            environ = getattr(getattr(self, "request", None), "environ", None) or {}
            raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
            if iam_request_cls is not S3IAMRequest or not raw:
                return original(self, iam_request_cls, *args, **kwargs)
            if (ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT
                    and "Authorization" not in self.headers):
                # moto fails with KeyError (500); S3 refuses an anonymous request to a private
                # bucket with 403 AccessDenied. (moto cannot check presigned URLs either.)
                raise S3AccessDeniedError()
            uri = self.uri
            self.uri = "http://moto" + canonical_target(raw)
            try:
                return original(self, iam_request_cls, *args, **kwargs)
            finally:
                self.uri = uri

        ActionAuthenticatorMixin._authenticate_and_authorize_action = _authenticate_and_authorize_action
    from moto.server import main as moto_main
    moto_main(["-H", "127.0.0.1", "-p", str(port)])


class MotoS3:
    def __init__(self, bucket, port=0, region="us-east-1", timeout=30.0, log=None, uri_fix=True):
        self.bucket, self.region, self.timeout, self.log = bucket, region, float(timeout), log
        self.uri_fix = uri_fix
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.info = None
        self._logfile = None

    # --- life cycle -------------------------------------------------------------------------
    def start(self):
        try:
            import boto3, botocore  # noqa: F401
        except ImportError as e:
            raise FixtureError(f"{e}; install with: python3 -m pip install 'moto[server]' boto3")
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", self.port))
            except OSError as e:
                raise FixtureError(f"cannot use 127.0.0.1:{self.port}: {e.strerror or e}")
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_REQUESTS))
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                  "TEST_SERVER_MODE", "MOTO_CALL_RESET_API"):
            env.pop(k, None)
        if self.log:
            self._logfile = open(self.log, "a+b")
        else:
            self._logfile = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve-moto", str(self.port)]
            + ([] if self.uri_fix else ["--moto-uri-as-is"]),
            stdin=subprocess.DEVNULL, stdout=self._logfile, stderr=subprocess.STDOUT, env=env,
            preexec_fn=_die_with_parent)
        try:
            self._wait_ready(deadline)
            self._setup(deadline)
            self._self_check(deadline)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = round(time.monotonic() - t0, 2)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._logfile:
            self._logfile.close()
            self._logfile = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- helpers ----------------------------------------------------------------------------
    def _log_tail(self):
        if not self._logfile:
            return ""
        try:
            self._logfile.flush()
            self._logfile.seek(0, os.SEEK_END)
            size = self._logfile.tell()
            self._logfile.seek(max(0, size - 2000))
            return self._logfile.read().decode("utf-8", "replace")
        except Exception:
            return ""

    def _fail(self, what):
        tail = self._log_tail().strip()
        raise FixtureError(what + (f"\n--- moto output (tail) ---\n{tail}" if tail else ""))

    def _wait_ready(self, deadline):
        url = self.endpoint + "/moto-api/config"
        while True:
            if self.proc.poll() is not None:
                self._fail(f"moto server exited with status {self.proc.returncode} before answering"
                           f" on {self.endpoint} (port taken? moto[server] installed?)")
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    r.read()
                return
            except urllib.error.HTTPError:
                return  # it answers
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self._fail(f"moto server did not answer on {self.endpoint} within {self.timeout:g} s")
            time.sleep(0.1)

    def _remaining(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            self._fail(f"moto set-up did not finish within {self.timeout:g} s")
        return left

    def client(self, service="s3", access_key=None, secret_key=None, deadline=None, **config):
        import boto3
        from botocore.config import Config
        t = max(1.0, min(10.0, self._remaining(deadline))) if deadline else 10.0
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=self.region,
            aws_access_key_id=access_key or (self.info or {}).get("accessKeyId", "AKIAFIXTURESETUP0000"),
            aws_secret_access_key=secret_key or (self.info or {}).get("secretAccessKey", "setup"),
            config=Config(connect_timeout=t, read_timeout=t, retries={"max_attempts": 1},
                          s3={"addressing_style": "path"}, **config))

    def _setup(self, deadline):
        from botocore.exceptions import BotoCoreError, ClientError
        try:
            iam = self.client("iam", deadline=deadline)
            iam.create_user(UserName=USER)
            key = iam.create_access_key(UserName=USER)["AccessKey"]
            iam.put_user_policy(UserName=USER, PolicyName="s3-all", PolicyDocument=json.dumps(POLICY))
            s3 = self.client("s3", deadline=deadline)
            kw = {} if self.region == "us-east-1" else {
                "CreateBucketConfiguration": {"LocationConstraint": self.region}}
            s3.create_bucket(Bucket=self.bucket, **kw)
            # moto's switch: from now on every request is authenticated (and the counter is zeroed).
            req = urllib.request.Request(self.endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
            with urllib.request.urlopen(req, timeout=self._remaining(deadline)) as r:
                r.read()
        except (BotoCoreError, ClientError, OSError) as e:
            self._fail(f"moto set-up failed: {e}")
        # serverPid: moto's own process, which a test may stop (SIGSTOP) to make the store hang.
        self.info = {"endpoint": self.endpoint, "region": self.region, "bucket": self.bucket,
                     "accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"],
                     "serverPid": self.proc.pid}

    def _self_check(self, deadline):
        from botocore.exceptions import BotoCoreError, ClientError
        try:
            self.client(deadline=deadline).head_bucket(Bucket=self.bucket)
        except (BotoCoreError, ClientError) as e:
            self._fail(f"self-check: a request signed with the printed secret was refused: {e}")
        try:
            self.client(secret_key="wrong" + self.info["secretAccessKey"], deadline=deadline
                        ).list_objects_v2(Bucket=self.bucket)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") == "SignatureDoesNotMatch":
                return
            self._fail(f"self-check: a wrong secret was refused, but not with SignatureDoesNotMatch: {e}")
        except BotoCoreError as e:
            self._fail(f"self-check failed: {e}")
        self._fail("self-check: moto accepted a request signed with a wrong secret (auth is off)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-moto"]:
        serve_moto(int(argv[1]), "--moto-uri-as-is" not in argv)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 (0: a free one)")
    p.add_argument("--bucket", required=True)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--timeout", type=float, default=30.0, help="start-up limit, seconds (30)")
    p.add_argument("--log", help="append moto's output to this file")
    p.add_argument("--moto-uri-as-is", action="store_true",
                   help="let moto check signatures against werkzeug's re-encoded URL (its own"
                        " behaviour, which refuses valid signatures of keys like a+b or ü)")
    args = p.parse_args(argv)

    stop = []
    def on_signal(signum, _frame):
        stop.append(signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    fixture = MotoS3(args.bucket, args.port, args.region, args.timeout, args.log,
                     uri_fix=not args.moto_uri_as_is)
    try:
        fixture.start()
    except FixtureError as e:
        print(f"moto_s3: {e}", file=sys.stderr)
        return 1
    try:
        if stop:
            return 0
        print(json.dumps(fixture.info), flush=True)
        print(f"moto_s3: ready in {fixture.startup_seconds} s", file=sys.stderr, flush=True)
        while not stop:
            try:
                fixture.proc.wait(0.5)
            except subprocess.TimeoutExpired:
                continue
            if stop:  # e.g. a terminal's SIGINT reached moto too
                return 0
            print(f"moto_s3: moto server exited unexpectedly with status {fixture.proc.returncode}",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        fixture.stop()


if __name__ == "__main__":
    # scripts/lib holds modules (exports.py, samples.py, ...) that must not shadow moto's imports.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.exit(main())
