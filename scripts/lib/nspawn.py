"""What scripts/test-systemd and scripts/test-package share: a Debian 12 root made once with
debootstrap, booted with systemd as PID 1 in a systemd-nspawn container (a cgroup of its own,
private network, entered with nsenter), and a walk of steps, each an assertion that prints the
journal when it fails.

    from nspawn import Container, Walk, ensure_root_cache, Failure, TimeLimit, log, run

Each run boots a throwaway overlay (or copy) of the cached root, so the cache stays as
debootstrap left it; Container.clean() powers it off and removes everything, also after a
failure.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

SUITE = "bookworm"
UNIT = "errorbusd"
OUTBOX = "/var/spool/errorbusd/outbox"
MSG_OPENED = "e44d68978ee64cfc9599df6a0d606e34"
MSG_ESCALATED = "070b087487244f118d9a75293993bfec"
MSG_RESOLVED = "922e01c430864cbe9849f334ff057a57"
MSG_ENDED = "d46628f4a1034fc6869d9b3c0893800e"
MESSAGE_IDS = [MSG_OPENED, MSG_ESCALATED, MSG_RESOLVED, MSG_ENDED]

started = time.monotonic()
results = []  # (name, ok, detail)
name = "nspawn"  # the log lines' prefix: the script's name


class Failure(Exception):
    pass


class TimeLimit(Exception):
    pass


def log(message):
    print(f"{name} [{time.monotonic() - started:6.1f}s] {message}", flush=True)


def run(cmd, check=True, timeout=120, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    result = subprocess.run(cmd, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


# ---------------------------------------------------------------------------------------------
# The Debian root, made once.

def ensure_root_cache(cache, include, suite=SUITE):
    """Makes the Debian root of `suite` in `cache` with debootstrap (minbase and the packages
    `include` names), unless it is there already with that package set (a stamp file records it)."""
    stamp_text = f"suite={suite}\nvariant=minbase\ninclude={','.join(sorted(include))}\n"
    stamp = os.path.join(cache, ".errorbus-stamp")
    try:
        with open(stamp) as f:
            if f.read() == stamp_text:
                return
    except FileNotFoundError:
        pass
    log(f"making the Debian {suite} root in {cache} with debootstrap (once; about a minute)")
    parent = os.path.dirname(cache)
    os.makedirs(parent, exist_ok=True)
    building = tempfile.mkdtemp(prefix=f".nspawn-{suite}-", dir=parent)
    try:
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(include), suite, building],
            timeout=1200)
        with open(os.path.join(building, ".errorbus-stamp"), "w") as f:
            f.write(stamp_text)
        if os.path.exists(cache):
            shutil.rmtree(cache)
        os.rename(building, cache)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


# ---------------------------------------------------------------------------------------------
# The container.

def cgroup_roots():
    """The cgroup hierarchies the container's group is made in: the unified one (cgroup v2,
    at /sys/fs/cgroup or, on a hybrid host, /sys/fs/cgroup/unified) and systemd's named v1
    hierarchy when the host has one."""
    roots = []
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        roots.append("/sys/fs/cgroup")
    else:
        if os.path.exists("/sys/fs/cgroup/unified/cgroup.controllers"):
            roots.append("/sys/fs/cgroup/unified")
        if os.path.isdir("/sys/fs/cgroup/systemd"):
            roots.append("/sys/fs/cgroup/systemd")
    if not roots:
        raise Failure("no cgroup hierarchy under /sys/fs/cgroup to run systemd-nspawn in")
    return roots


def remove_cgroup(path):
    if not os.path.isdir(path):
        return
    kill = os.path.join(path, "cgroup.kill")
    if os.path.exists(kill):
        try:
            with open(kill, "w") as f:
                f.write("1")
        except OSError:
            pass
    for _ in range(50):
        for directory, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
            try:
                os.rmdir(directory)
            except OSError:
                pass
        if not os.path.exists(path):
            return
        time.sleep(0.1)
    log(f"warning: could not remove the cgroup {path}")


class Container:
    """A throwaway overlay of the cached root `cache` under `work`, booted with systemd as PID 1;
    `binds` are extra systemd-nspawn arguments (--bind-ro=…)."""

    def __init__(self, work, cache, binds=(), machine="errorbus-walk"):
        self.work = work
        self.cache = cache
        self.binds = list(binds)
        self.machine = machine
        self.root = os.path.join(work, "root")
        self.console = os.path.join(work, "console.log")
        self.cgroups = [os.path.join(r, os.path.basename(work)) for r in cgroup_roots()]
        self.nspawn = None
        self.leader = None
        self.overlay = False

    def make_tree(self):
        os.makedirs(self.root)
        upper, workdir = os.path.join(self.work, "upper"), os.path.join(self.work, "overlay-work")
        os.makedirs(upper)
        os.makedirs(workdir)
        mounted = run(["mount", "-t", "overlay", "overlay", "-o",
                       f"lowerdir={self.cache},upperdir={upper},workdir={workdir}", self.root], check=False)
        if mounted.returncode == 0:
            self.overlay = True
        else:
            log("no overlayfs here: copying the root instead")
            run(["cp", "-a", "--reflink=auto", self.cache + "/.", self.root], timeout=600)

    def boot(self):
        for group in self.cgroups:
            os.makedirs(group, exist_ok=True)
        groups = self.cgroups

        def enter_cgroup():
            os.setsid()
            for group in groups:
                with open(os.path.join(group, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))

        console = open(self.console, "ab")
        self.nspawn = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "--boot", "--register=no", "--keep-unit", "--private-network",
             "--console=read-only", f"--machine={self.machine}", "-D", self.root,
             # systemd as PID 1 of a real system has every capability; nspawn keeps
             # CAP_SYS_RESOURCE from it by default, and without it LimitNICE= in errorbusd.service
             # could not be applied.
             "--capability=CAP_SYS_RESOURCE"] + self.binds,
            stdin=subprocess.DEVNULL, stdout=console, stderr=console, preexec_fn=enter_cgroup)
        console.close()
        deadline = time.monotonic() + 60
        self.leader = None
        while time.monotonic() < deadline:
            if self.nspawn.poll() is not None:
                raise Failure(f"systemd-nspawn exited {self.nspawn.returncode}:\n{self.console_tail()}")
            leader = self.find_leader()
            if leader:
                self.leader = leader
                state = self.run(["systemctl", "is-system-running", "--wait"], check=False, timeout=60)
                if state.stdout.strip() in ("running", "degraded"):
                    if state.stdout.strip() == "degraded":
                        failed = self.run(["systemctl", "--failed", "--no-legend"], check=False).stdout
                        log(f"the container booted degraded: {failed.strip()}")
                    return
            time.sleep(0.1)
        raise Failure(f"the container did not boot within 60 s:\n{self.console_tail()}")

    def find_leader(self):
        try:
            with open(f"/proc/{self.nspawn.pid}/task/{self.nspawn.pid}/children") as f:
                children = f.read().split()
        except OSError:
            return None
        for child in children:
            try:
                with open(f"/proc/{child}/comm") as f:
                    if f.read().strip() == "systemd":
                        return int(child)
            except OSError:
                pass
        return None

    def console_tail(self, lines=40):
        try:
            with open(self.console, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def run(self, cmd, check=True, timeout=60, input=None):
        if self.leader is None:
            raise Failure("the container is not running")
        env = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "TERM=dumb"]
        return run(["nsenter", "-t", str(self.leader), "-a"] + env + cmd, check=check,
                   timeout=timeout, input=input)

    def sh(self, script, check=True, timeout=60, input=None):
        return self.run(["sh", "-c", script], check=check, timeout=timeout, input=input)

    def path(self, inside):
        return os.path.join(self.root, inside.lstrip("/"))

    def wait_exit(self, timeout):
        try:
            return self.nspawn.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def reboot(self):
        self.run(["systemctl", "reboot"], check=False)
        status = self.wait_exit(60)
        self.leader = None
        if status != 133:
            raise Failure(f"systemd-nspawn exited {status} after systemctl reboot, not 133:\n"
                          f"{self.console_tail()}")

    def poweroff(self):
        if self.nspawn is None or self.nspawn.poll() is not None:
            return
        if self.leader:
            self.run(["systemctl", "poweroff"], check=False, timeout=30)
            if self.wait_exit(60) is not None:
                return
            log("the container did not power off within 60 s: killing it")
        for group in self.cgroups:
            kill = os.path.join(group, "cgroup.kill")
            if os.path.exists(kill):
                with open(kill, "w") as f:
                    f.write("1")
        try:
            os.killpg(self.nspawn.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.wait_exit(30)

    def clean(self):
        try:
            self.poweroff()
        except Exception as error:  # cleanup goes on
            log(f"warning: powering off: {error}")
        for group in self.cgroups:
            remove_cgroup(group)
        if self.overlay:
            for _ in range(20):
                if run(["umount", self.root], check=False).returncode == 0:
                    break
                time.sleep(0.2)
            else:
                run(["umount", "--lazy", self.root], check=False)
        shutil.rmtree(self.work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The walk's tools.

class Walk:
    def __init__(self, container):
        self.c = container
        self.dropped = {}  # sha256 -> file name
        self.delivered = set()  # sha256s the sandbox stored, across its restarts
        self.serial = 0

    # Assertions.
    def step(self, name, function):
        log(f"step: {name}")
        begun = time.monotonic()
        try:
            function()
        except Failure as failure:
            results.append((name, False, str(failure)))
            log(f"FAILED: {name}\n{indent(str(failure))}")
            self.show_journal()
            return False
        results.append((name, True, f"{time.monotonic() - begun:.1f}s"))
        log(f"ok: {name} ({time.monotonic() - begun:.1f}s)")
        return True

    def check(self, condition, message):
        if not condition:
            raise Failure(message)

    def show_journal(self, lines=60):
        if self.c.leader is None:
            return
        text = self.c.run(["journalctl", "--no-pager", "-o", "short-monotonic", "-n", str(lines),
                           "-u", "errorbusd.service", "-u", "errorbusd.socket", "-u", "errorbus-sandbox.service"],
                          check=False).stdout
        print(f"--- the journal's last {lines} lines of errorbusd and the sandbox:\n{text}---", flush=True)

    # systemd.
    def show(self, unit, *properties):
        out = self.c.run(["systemctl", "show", unit, "-p", ",".join(properties)]).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def wait_for(self, what, predicate, timeout=30, interval=0.1):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise Failure(f"{what}: not within {timeout} s (last seen: {last!r})")

    def wait_active(self, unit=UNIT, timeout=30):
        def active():
            state = self.show(unit, "ActiveState", "SubState")
            return state if state.get("ActiveState") == "active" else (False, state)[0]
        try:
            self.wait_for(f"{unit} active", active, timeout)
        except Failure:
            state = self.show(unit, "ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts")
            raise Failure(f"{unit} did not become active within {timeout} s: {state}")

    def main_pid(self):
        return int(self.show(UNIT, "MainPID")["MainPID"])

    # The journal.
    def cursor(self):
        out = self.c.run(["journalctl", "-n", "0", "--show-cursor", "--no-pager"], check=False).stdout
        for line in out.splitlines():
            if line.startswith("-- cursor: "):
                return line[len("-- cursor: "):]
        return None

    def journal(self, *args, after=None, json_output=False):
        # --cursor, not --after-cursor: journalctl 252 with --after-cursor and a match skips the
        # first matching entry when the cursor's own entry does not match. The cursor's entry is
        # left out here instead (it is older than what the walk looks for anyway).
        cmd = ["journalctl", "--no-pager", "-q"]
        if after:
            cmd.append(f"--cursor={after}")
        if json_output:
            cmd += ["-o", "json"]
        out = self.c.run(cmd + list(args), check=False).stdout
        if json_output:
            entries = [json.loads(line) for line in out.splitlines() if line.strip()]
            return [e for e in entries if e.get("__CURSOR") != after]
        return out

    def wait_journal(self, what, *args, after=None, timeout=30, contains=None):
        def found():
            entries = self.journal(*args, after=after, json_output=True)
            if contains is not None:
                entries = [e for e in entries if contains in str(e.get("MESSAGE", ""))]
            return entries
        return self.wait_for(f"the journal to show {what}", found, timeout, interval=0.2)

    # The sandbox API on 127.0.0.1:8080 of the container's network, asked with curl: from inside
    # the container (test-systemd) or from the host in the container's network namespace
    # (test-package, whose root has no curl): the `curl` method says how.
    def curl(self, arguments, check=True):
        return self.c.run(["curl"] + arguments, check=check)

    def admin(self, method, path, body=None, check=True):
        arguments = ["-sS", "--max-time", "10", "-X", method, f"http://127.0.0.1:8080/admin/{path}"]
        if body is not None:
            arguments += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        result = self.curl(arguments, check=check)
        text = result.stdout.strip()
        return json.loads(text) if text else None

    def sandbox_items(self):
        items = self.admin("GET", "items")["items"]
        stored = {item["sha256"] for item in items}
        self.delivered |= stored
        return stored

    # The outbox. Files are written from the host into the container's tree: under a dot-name,
    # then renamed in, as the README says.
    def drop(self, prefix, count, size=4096):
        outbox = self.c.path(OUTBOX)
        names = []
        for _ in range(count):
            self.serial += 1
            name = f"{prefix}-{self.serial:05d}.bin"
            data = os.urandom(size)
            partial = os.path.join(outbox, f".{name}.part")
            with open(partial, "wb") as f:
                f.write(data)
            os.rename(partial, os.path.join(outbox, name))
            self.dropped[hashlib.sha256(data).hexdigest()] = name
            names.append(name)
        return names

    def outbox_files(self):
        outbox = self.c.path(OUTBOX)
        return sorted(n for n in os.listdir(outbox) if not n.startswith("."))

    def wait_delivered(self, timeout=60):
        def done():
            left = self.outbox_files()
            if left:
                return False
            missing = set(self.dropped) - (self.delivered | self.sandbox_items())
            return not missing
        try:
            self.wait_for("every dropped file delivered", done, timeout, interval=0.3)
        except Failure:
            missing = set(self.dropped) - self.delivered
            raise Failure(f"not delivered within {timeout} s: {len(self.outbox_files())} file(s) left in "
                          f"the outbox, {len(missing)} of {len(self.dropped)} dropped files not stored by "
                          f"the sandbox: {sorted(self.dropped[h] for h in missing)[:10]}")

    # errorbusctl.
    def ctl(self, *args, check=False, timeout=30):
        return self.c.run(["errorbusctl"] + list(args), check=check, timeout=timeout)

    def ctl_json(self, *args):
        result = self.ctl(*args, "--json")
        if result.returncode != 0:
            raise Failure(f"errorbusctl {' '.join(args)} --json exited {result.returncode}: "
                          f"{result.stdout}{result.stderr}")
        return json.loads(result.stdout)

    def opened_incidents(self, after):
        entries = self.journal(f"MESSAGE_ID={MSG_OPENED}", after=after, json_output=True)
        return sorted({int(e["ERRORBUS_INCIDENT"]) for e in entries if "ERRORBUS_INCIDENT" in e})

    def check_previous_incidents_closed(self, ids):
        incidents = {i["id"]: i for i in self.ctl_json("incidents", "--all")["incidents"]}
        still_open = [i for i in ids if i in incidents and not incidents[i].get("closedAt")]
        missing = [i for i in ids if i not in incidents]
        self.check(not still_open, f"incidents of the previous run still open after the restart: "
                   f"{[incidents[i] for i in still_open]}")
        self.check(not missing, f"incidents {missing} of the previous run are not in errorbusctl incidents --all")


def indent(text):
    return "\n".join("    " + line for line in text.splitlines())
