# Shared by the scripts: install or start what errorbus needs when it is missing. Sourced.

require_swift() {
    export PATH="/opt/swift/usr/bin:$PATH"
    command -v swift >/dev/null || { echo "errorbus: no Swift toolchain (expected /opt/swift)" >&2; exit 1; }
}

# Installs Debian packages that are not installed yet.
require_debian_packages() {
    local missing=()
    for package in "$@"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return
    echo "errorbus: installing ${missing[*]}" >&2
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
}

# promtool, Prometheus's rule checker and unit-test runner, comes with Debian's prometheus
# package. That package is the server too, which its installation starts where services start
# (on a test host: `systemctl disable --now prometheus` if it is not wanted).
require_promtool() {
    command -v promtool >/dev/null && return
    require_debian_packages prometheus
    command -v promtool >/dev/null || { echo "errorbus: Debian's prometheus package installed no promtool" >&2; exit 1; }
}

# Alertmanager (Debian's prometheus-alertmanager: prometheus-alertmanager and amtool, 0.25 on
# Debian 12): amtool checks the Alertmanager example, the fleet integration test runs a real one.
# Like prometheus, its installation starts the service where services start.
require_alertmanager() {
    command -v amtool >/dev/null && command -v prometheus-alertmanager >/dev/null && return
    require_debian_packages prometheus-alertmanager
    command -v amtool >/dev/null || { echo "errorbus: Debian's prometheus-alertmanager package installed no amtool" >&2; exit 1; }
}

# The CSystemd module needs libsystemd's headers and pkg-config file.
require_libsystemd() {
    require_debian_packages libsystemd-dev pkg-config
}

# The journal tests write to a real systemd-journald and read it back with journalctl. Where
# systemd is not PID 1 (a container, a build VM) nobody starts journald, so start it, in its own
# session so it outlives the script like a system service, and wait for its socket. A socket
# file left behind by a journald that died does not count as running.
require_journald() {
    local socket=/run/systemd/journal/socket
    if pgrep -x systemd-journal >/dev/null && [ -S "$socket" ]; then return; fi
    rm -f "$socket"
    setsid /lib/systemd/systemd-journald </dev/null >/dev/null 2>&1 &
    for _ in $(seq 100); do
        [ -S "$socket" ] && return
        sleep 0.1
    done
    echo "errorbus: systemd-journald did not create $socket" >&2
    exit 1
}

# systemd-journal-upload and systemd-journal-remote (not part of Debian's systemd package), and
# systemd-socket-activate, which holds journal-remote's port while it starts.
require_journal_remote() {
    require_debian_packages systemd-journal-remote
    [ -x /usr/bin/systemd-socket-activate ] || require_debian_packages systemd
}

# require_python_module MODULE [PYPI-PACKAGE]
require_python_module() {
    python3 -c "import $1" 2>/dev/null || pip install -q "${2:-$1}"
}
