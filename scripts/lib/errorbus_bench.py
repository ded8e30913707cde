"""Shared by the Python benchmark scripts (bench-daemon, bench-outages): release builds, the
sandbox, errorbusd, outbox files. Imported after `sys.path.insert(0, <scripts>/lib)`."""
import json, os, shutil, signal, subprocess, sys, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "bench-secret"
os.environ["PATH"] = "/opt/swift/usr/bin:" + os.environ["PATH"]


def build_products(products=("errorbusd", "errorbus-sandbox")):
    """Release-builds each product (one per invocation: swift build keeps only the last
    --product it is given) and returns the bin directory. Installs libsystemd-dev first when it
    is missing, as the README's commands do."""
    subprocess.run(["bash", "-c", "source scripts/lib/prerequisites.sh && require_libsystemd"], cwd=ROOT, check=True)
    for product in products:
        subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=ROOT, check=True)
    return subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


class Sandbox:
    def __init__(self, bin_dir, work):
        secret = os.path.join(work, "sandbox-secret")
        open(secret, "w").write(SECRET)
        port_file = os.path.join(work, "sandbox-port")
        self.process = subprocess.Popen([bin_dir + "/errorbus-sandbox", "--port-file", port_file, "--client-secret-file", secret, "--log-level", "warning"])
        for _ in range(400):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.025)
        self.url = "http://127.0.0.1:%s" % open(port_file).read().strip()

    def admin(self, method, path, body=None):
        request = urllib.request.Request(self.url + "/admin/" + path, method=method, data=body and json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            data = response.read()
            return json.loads(data) if data else None

    def reset(self):
        self.admin("POST", "reset")

    def stored(self):
        """How many distinct items the API holds."""
        return self.admin("GET", "stats?brief")["items"]["distinct"]

    def baseline_arguments(self):
        """What sync-baseline needs before DIRECTORY CONCURRENCY."""
        return [self.url, SECRET]

    def daemon_configuration(self, work, credentials):
        """errorbusd's configuration file for this API, writing what credentials it needs."""
        open(os.path.join(credentials, "client-secret"), "w").write(SECRET)
        return None

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait()


class Nginx:
    """nginx (Debian's nginx-light) as a WebDAV server with basic auth, one worker process, on a
    free loopback port. Its files (and request bodies on their way) go to memory (/dev/shm), as the
    sandbox keeps its items: the disk the outbox and errorbusd's state are on is not shared with
    the server, whose writes would otherwise set the pace of both sides. Installs nginx-light when
    missing."""
    USER, PASSWORD = "errorbus", "bench-password"

    def __init__(self, work, locations="", access_log=False, dav=None, servers=""):
        """`locations`: more nginx `location` blocks for the server, with `{dav}` for the WebDAV
        location's path prefix (`/dav`); `access_log`: log each request (method, URI, status) to
        `access.log` in the server's directory; `dav`: what the WebDAV location does after basic
        auth, in place of storing the file itself (e.g. `proxy_pass` to backends); `servers`: more
        blocks of the `http` context, with `{root}` for the server's directory (the backends)."""
        subprocess.run(["bash", "-c", "source scripts/lib/prerequisites.sh && require_debian_packages nginx-light openssl"], cwd=ROOT, check=True)
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        import tempfile
        self.directory = tempfile.mkdtemp(prefix="errorbus-bench-nginx-", dir="/dev/shm" if os.path.isdir("/dev/shm") else work)
        self.dav = os.path.join(self.directory, "html", "dav")
        for directory in (self.directory + "/tmp", self.dav):
            os.makedirs(directory, exist_ok=True)
        hashed = subprocess.run(["openssl", "passwd", "-apr1", self.PASSWORD], check=True, capture_output=True, text=True).stdout.strip()
        open(self.directory + "/htpasswd", "w").write("%s:%s\n" % (self.USER, hashed))
        d = self.directory
        open(d + "/nginx.conf", "w").write('''%s
daemon off;
worker_processes 1;
pid %s/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
    log_format errorbus '$msec $request_method $uri $status';
    access_log %s;
    client_body_temp_path %s/tmp;
    client_max_body_size 0;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:%d;
        location = /healthz { return 204; }
        location /dav/ {
            %s
            auth_basic "errorbus";
            auth_basic_user_file %s/htpasswd;
        }
%s
    }
%s
}
''' % ("user root root;" if os.geteuid() == 0 else "", d,
       (d + "/access.log errorbus") if access_log else "off", d, port,
       dav or "root %s/html; dav_methods PUT; create_full_put_path on;" % d,
       d, locations.replace("{dav}", "/dav"), servers.replace("{root}", d)))
        self.process = subprocess.Popen(["nginx", "-e", "stderr", "-p", d, "-c", d + "/nginx.conf"], stderr=subprocess.PIPE, text=True)
        for line in self.process.stderr:
            if "start worker process " in line:
                break
        else:
            sys.exit("nginx did not start (status %s)" % self.process.wait())
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        self.url = "http://127.0.0.1:%d" % port

    def reset(self):
        shutil.rmtree(self.dav)
        os.makedirs(self.dav)

    def stored(self):
        return len(os.listdir(self.dav))

    def baseline_arguments(self):
        return ["--webdav", self.url, "%s:%s" % (self.USER, self.PASSWORD)]

    def daemon_configuration(self, work, credentials):
        open(os.path.join(credentials, "password"), "w").write(self.PASSWORD)
        path = os.path.join(work, "webdav.yaml")
        open(path, "w").write('''api:
  probe-url: %s/healthz
  upload:
    url: /dav/{name}
    idempotency-header:
    delivered: [201, 204]
    receipt:
      json-pointer:
auth:
  method: basic
  user: %s
''' % (self.url, self.USER))
        return path

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def tree_of(bin_dir):
    """The source tree a bin directory was built from (the one holding Package.swift)."""
    directory = os.path.realpath(bin_dir)
    while not os.path.exists(os.path.join(directory, "Package.swift")) and directory != "/":
        directory = os.path.dirname(directory)
    return directory if directory != "/" else ROOT


class Daemon:
    def __init__(self, bin_dir, work, sandbox, concurrency=16, level="notice", extra_environment=None, keep_log=False):
        """`keep_log`: keep each log line after the ready one, with the (monotonic) time it came,
        in `lines`."""
        self.lines = []
        self.outbox, self.state = os.path.join(work, "outbox"), os.path.join(work, "state")
        credentials = os.path.join(work, "credentials")
        for directory in (self.outbox, self.state, credentials, os.path.join(work, "resources")):
            os.makedirs(directory, exist_ok=True)
        configuration = sandbox.daemon_configuration(work, credentials) or os.path.join(tree_of(bin_dir), "etc/errorbusd/errorbusd.yaml")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ERRORBUSD_")}
        environment.update({
            "CREDENTIALS_DIRECTORY": credentials,
            "ERRORBUSD_API_BASE_URL": sandbox.url,
            "ERRORBUSD_SYNC_OUTBOX": self.outbox,
            "ERRORBUSD_SYNC_CONCURRENCY": str(concurrency),
            "ERRORBUSD_STATE_DIRECTORY": self.state,
            "ERRORBUSD_LOADER_DIRECTORY": os.path.join(work, "resources"),
            "ERRORBUSD_CONTROL_SOCKET_PATH": os.path.join(work, "control.socket"),
            "ERRORBUSD_LOG_LEVEL": level,
        })
        environment.update(extra_environment or {})
        self.started = time.monotonic()
        self.process = subprocess.Popen([bin_dir + "/errorbusd", "--config", configuration],
                                        env=environment, stderr=subprocess.PIPE, text=True)
        self.reported = None
        for line in self.process.stderr:
            if "errorbusd ready" in line:
                self.ready = time.monotonic() - self.started
                self.reported = line.split("startup=")[1].split(" [")[0] if "startup=" in line else None
                break
        else:
            sys.exit("errorbusd exited before it was ready (status %s)" % self.process.wait())
        # Keep reading stderr so the daemon never blocks on a full pipe.
        keep = (lambda line: self.lines.append((time.monotonic(), line))) if keep_log else (lambda line: None)
        threading.Thread(target=lambda: [keep(line) for line in self.process.stderr], daemon=True).start()

    def first(self, pattern, since=0):
        """When the first kept line at or after `since` matching `pattern` (a compiled regular
        expression) came; None if none did."""
        return next((at for at, line in list(self.lines) if at >= since and pattern.search(line)), None)

    def rss_kib(self, field="VmRSS"):
        for line in open("/proc/%d/status" % self.process.pid):
            if line.startswith(field + ":"):
                return int(line.split()[1])

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait()


def make_files(directory, count, size):
    os.makedirs(directory, exist_ok=True)
    for number in range(count):
        with open(os.path.join(directory, "item-%06d.bin" % number), "wb") as file:
            file.write(("%d\n" % number).encode() + os.urandom(size - 8))


def wait_until_empty(directory, timeout=600):
    """Polls every 10 ms, reading only as far as the first entry: listing thousands of names at
    each poll would take CPU from what is measured, and a coarse poll would add to its time."""
    deadline = time.monotonic() + timeout
    while True:
        with os.scandir(directory) as entries:
            if next(entries, None) is None:
                return
        if time.monotonic() > deadline:
            sys.exit("the outbox did not empty within %ds" % timeout)
        time.sleep(0.01)
